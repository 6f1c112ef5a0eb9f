/* The host's choice of CPU kernels: the OS's permission for AMX, and the buffer of the weights
 * a level prepares. */
#define _GNU_SOURCE
#include <string.h>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "host_private.h"

int kann_host_amx_permit(void) {
#if defined(__linux__) && defined(__x86_64__)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return 0;
#endif
}

kann_status kann_host_model_set_isa(kann_model *m, const char *name, void **prepared,
                                    kann_error *err) {
    *prepared = NULL;
    kann_isa isa;
    if (name && *name) {
        int level = kann_isa_from_name(name);
        if (level < 0)
            return kann_host_fail(err, KANN_E_ARGUMENT,
                                  "unknown ISA '%s' (generic, avx2, avx512 or amx)", name);
        isa = (kann_isa)level;
        if (isa == KANN_ISA_AMX && kann_isa_supported(isa) && !kann_host_amx_permit())
            return kann_host_fail(err, KANN_E_UNSUPPORTED,
                                  "the OS does not let this process use the AMX tiles");
    } else {
        isa = kann_isa_supported(KANN_ISA_AMX) && kann_host_amx_permit() ? KANN_ISA_AMX
                                                                         : kann_isa_best();
    }
    uint64_t size = kann_model_prepared_size(m, isa);
    void *buf = NULL;
    if (size) {
        if (size > SIZE_MAX || !(buf = kann_host_arena_alloc((size_t)size)))
            return kann_host_fail(err, KANN_E_RUNTIME,
                                  "cannot allocate %llu bytes of prepared weights for %s",
                                  (unsigned long long)size, kann_isa_name(isa));
    }
    kann_status st = kann_model_set_isa_prepared(m, isa, buf, (size_t)size, err);
    if (st != KANN_OK) {
        kann_host_arena_free(buf);
        return st;
    }
    *prepared = buf;
    return KANN_OK;
}
