/* Status names and dtype sizes: the small lookup tables behind kann.h. */
#include "kann.h"

static const char *const status_names[KANN_STATUS_COUNT] = {
    [KANN_OK] = "KANN_OK",
    [KANN_E_ARGUMENT] = "KANN_E_ARGUMENT",
    [KANN_E_ALIGNMENT] = "KANN_E_ALIGNMENT",
    [KANN_E_MAGIC] = "KANN_E_MAGIC",
    [KANN_E_VERSION] = "KANN_E_VERSION",
    [KANN_E_PROBE] = "KANN_E_PROBE",
    [KANN_E_TRUNCATED] = "KANN_E_TRUNCATED",
    [KANN_E_CRC] = "KANN_E_CRC",
    [KANN_E_CORRUPT] = "KANN_E_CORRUPT",
    [KANN_E_UNSUPPORTED] = "KANN_E_UNSUPPORTED",
    [KANN_E_ARENA] = "KANN_E_ARENA",
    [KANN_E_NOT_FOUND] = "KANN_E_NOT_FOUND",
    [KANN_E_RUNTIME] = "KANN_E_RUNTIME",
    [KANN_E_IO] = "KANN_E_IO",
};
_Static_assert(sizeof(status_names) / sizeof(status_names[0]) == KANN_STATUS_COUNT,
               "one name per status");

const char *kann_status_name(kann_status s) {
    if ((unsigned)s >= KANN_STATUS_COUNT || status_names[s] == 0) return "KANN_E_UNKNOWN";
    return status_names[s];
}

size_t kann_dtype_size(uint32_t dtype) {
    switch (dtype) {
    case KANN_DTYPE_F32:
    case KANN_DTYPE_I32:
        return 4;
    case KANN_DTYPE_U8:
    case KANN_DTYPE_I8:
    case KANN_DTYPE_BOOL:
        return 1;
    case KANN_DTYPE_I64:
        return 8;
    default:
        return 0;
    }
}
