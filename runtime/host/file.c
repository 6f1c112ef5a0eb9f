/* Files and memory for the host layer: model files mapped read-only, atomic writes, arenas,
 * and the CPU count. */
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
        ssize_t k = read(fd, buf + len, cap - len);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int e = errno;
            free(buf);
            return kann_host_fail(err, KANN_E_IO, "%s: read failed: %s", path, strerror(e));
        }
        if (k == 0) break;
        len += (size_t)k;
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
    size_t n = size ? size : 64;
    if (n > SIZE_MAX - 63) return NULL;
    n = (n + 63) / 64 * 64;
    void *p = aligned_alloc(64, n);
    if (p) memset(p, 0, n);
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
