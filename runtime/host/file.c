/* Files and memory for the host layer: model files read into huge pages or mapped read-only,
 * atomic writes, arenas, and the CPU count. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_private.h"

kann_status kann_host_fail(kann_error *err, kann_status s, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = s;
    }
    return s;
}

/* Reads fd into buf[*len, cap) until that is full or the file ends: 0, or the errno of a
 * failed read. */
static int read_into(int fd, uint8_t *buf, size_t cap, size_t *len) {
    while (*len < cap) {
        ssize_t k = read(fd, buf + *len, cap - *len);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return errno;
        if (k == 0) break;
        *len += (size_t)k;
    }
    return 0;
}

/* Reads fd to its end into a buffer of `align`-byte alignment (0: plain malloc). */
static kann_status read_fd(int fd, const char *path, size_t align, void **data, size_t *size,
                           kann_error *err) {
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) return kann_host_fail(err, KANN_E_IO, "%s: out of memory", path);
    for (;;) {
        if (len == cap) {
            if (cap > SIZE_MAX / 2) {
                free(buf);
                return kann_host_fail(err, KANN_E_IO, "%s: file too large", path);
            }
            uint8_t *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                return kann_host_fail(err, KANN_E_IO, "%s: out of memory", path);
            }
            buf = p;
            cap *= 2;
        }
        int e = read_into(fd, buf, cap, &len);
        if (e) {
            free(buf);
            return kann_host_fail(err, KANN_E_IO, "%s: read failed: %s", path, strerror(e));
        }
        if (len < cap) break; /* the end of the file */
    }
    if (align) {
        uint8_t *aligned = aligned_alloc(align, len ? (len + align - 1) / align * align : align);
        if (!aligned) {
            free(buf);
            return kann_host_fail(err, KANN_E_IO, "%s: out of memory", path);
        }
        memcpy(aligned, buf, len);
        free(buf);
        buf = aligned;
    }
    *data = buf;
    *size = len;
    return KANN_OK;
}

/* Buffers from this size up (model files, arenas) ask the kernel for 2 MiB pages: their
 * weights and activations are streamed every run, and with 4 KiB pages each pass over them
 * walks the page tables again. On the Intel core pair, runs alternated on one pool, two threads:
 * mobilenet_v2, squeezenet1_1, regnet_x_400mf and resnet18 1.5-3 % faster (mobilenet_v2 2 % on
 * one thread); kann-run against its former self, two threads, resnet18 0.96 and squeezenet1_1
 * 0.96 of the time. Where transparent huge pages are off, or not Linux, the advice does
 * nothing. */
#define HUGE_PAGE ((size_t)2 << 20)

/* A buffer of at least n bytes: 2 MiB-aligned with huge pages advised from HUGE_PAGE up, else
 * 64-byte-aligned. Release with free. */
static void *alloc_large(size_t n) {
    size_t align = n >= HUGE_PAGE ? HUGE_PAGE : 64;
    if (n > SIZE_MAX - (align - 1)) return NULL;
    n = n ? (n + align - 1) / align * align : align;
    void *p = aligned_alloc(align, n);
#ifdef MADV_HUGEPAGE
    if (p && align == HUGE_PAGE) madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

/* Reads the first `size` bytes of regular file fd (fewer where it ends sooner) into a buffer of
 * alloc_large; *got: the bytes read. */
static kann_status read_regular(int fd, const char *path, size_t size, void **data, size_t *got,
                                kann_error *err) {
    uint8_t *buf = alloc_large(size);
    if (!buf) return kann_host_fail(err, KANN_E_IO, "%s: out of memory", path);
    size_t len = 0;
    int e = read_into(fd, buf, size, &len);
    if (e) {
        free(buf);
        return kann_host_fail(err, KANN_E_IO, "%s: read failed: %s", path, strerror(e));
    }
    *data = buf;
    *got = len;
    return KANN_OK;
}

kann_status kann_host_read_all(const char *path, void **data, size_t *size, kann_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return kann_host_fail(err, KANN_E_IO, "%s: cannot open: %s", path, strerror(errno));
    kann_status st = read_fd(fd, path, 0, data, size, err);
    close(fd);
    return st;
}

kann_status kann_host_file_load(const char *path, kann_host_file *f, kann_error *err) {
    f->data = NULL;
    f->size = 0;
    f->mapped = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return kann_host_fail(err, KANN_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return kann_host_fail(err, KANN_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return kann_host_fail(err, KANN_E_IO, "%s: is a directory", path);
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size >= HUGE_PAGE &&
        (uint64_t)st.st_size <= SIZE_MAX) { /* read into huge pages */
        void *data = NULL;
        size_t got = 0;
        kann_status s = read_regular(fd, path, (size_t)st.st_size, &data, &got, err);
        close(fd);
        if (s != KANN_OK) return s;
        f->data = data;
        f->size = got;
        return KANN_OK;
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= SIZE_MAX) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            close(fd);
            f->data = p;
            f->size = (size_t)st.st_size;
            f->mapped = 1;
            return KANN_OK;
        }
    }
    void *data;
    size_t size;
    kann_status s = read_fd(fd, path, 64, &data, &size, err);
    close(fd);
    if (s != KANN_OK) return s;
    f->data = data;
    f->size = size;
    return KANN_OK;
}

void kann_host_file_free(kann_host_file *f) {
    if (!f || !f->data) return;
    if (f->mapped)
        munmap((void *)f->data, f->size);
    else
        free((void *)f->data);
    f->data = NULL;
    f->size = 0;
}

kann_status kann_host_write_file_atomic(const char *path, const void *data, size_t n,
                                        kann_error *err) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + sizeof ".tmp.XXXXXX");
    if (!tmp) return kann_host_fail(err, KANN_E_IO, "%s: out of memory", path);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return kann_host_fail(err, KANN_E_IO, "%s: cannot create a file there: %s", path,
                              strerror(e));
    }
    const uint8_t *p = data;
    size_t left = n;
    const char *what = NULL;
    int e = 0;
    while (left > 0) {
        ssize_t k = write(fd, p, left);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            what = "write";
            e = k < 0 ? errno : EIO;
            break;
        }
        p += k;
        left -= (size_t)k;
    }
    /* mkstemp makes the file private (0600); outputs are ordinary files. */
    if (!what && fchmod(fd, 0644) != 0) what = "chmod", e = errno;
    if (!what && fsync(fd) != 0) what = "fsync", e = errno;
    if (close(fd) != 0 && !what) what = "close", e = errno;
    if (!what && rename(tmp, path) != 0) what = "rename", e = errno;
    if (what) unlink(tmp);
    free(tmp);
    if (what) return kann_host_fail(err, KANN_E_IO, "%s: %s failed: %s", path, what, strerror(e));
    return KANN_OK;
}

void *kann_host_arena_alloc(size_t size) {
    void *p = alloc_large(size);
    if (p) memset(p, 0, size);
    return p;
}

void kann_host_arena_free(void *arena) {
    free(arena);
}

uint32_t kann_host_cpu_count(void) {
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return (uint32_t)n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1;
}
