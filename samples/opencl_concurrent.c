/* Two instances of one model running at once from one process, each on its own half of an
 * OpenCL device (sub-devices), against one instance on the whole device: prints the throughput
 * of both ways.
 *
 *   kann-opencl-concurrent MODEL.bin [RUNS] [DEVICE]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kann_host.h"
#include "kann_opencl.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, const kann_error *e) {
    fprintf(stderr, "kann-opencl-concurrent: %s: %s\n", what, e->message);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: kann-opencl-concurrent MODEL.bin [RUNS] [DEVICE]\n");
        return 2;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 20;
    if (runs < 1) runs = 1;
    kann_error e;
    kann_host_file file;
    kann_model m;
    if (kann_host_file_load(argv[1], &file, &e) != KANN_OK) return fail("load", &e);
    if (kann_model_open(&m, file.data, file.size, &e) != KANN_OK) return fail("open", &e);
    size_t arena_size = (size_t)kann_model_arena_size(&m);
    void *arenas[2] = {kann_host_arena_alloc(arena_size), kann_host_arena_alloc(arena_size)};
    kann_session s[2];
    for (int i = 0; i < 2; i++)
        if (!arenas[i] || kann_session_init(&s[i], &m, arenas[i], arena_size, &e) != KANN_OK)
            return fail("session", &e);

    /* one instance, whole device: runs one after another */
    kann_opencl_options o = {0};
    o.device = argc > 3 ? argv[3] : NULL;
    kann_opencl *whole, *half[2];
    if (kann_opencl_open(&whole, &m, &o, &e) != KANN_OK) return fail("whole device", &e);
    printf("device: %s\n", kann_opencl_device_name(whole));
    for (int i = 0; i < 3; i++) /* warm-up */
        if (kann_opencl_run(whole, &s[0], &e) != KANN_OK) return fail("run", &e);
    double t0 = now_s();
    for (int i = 0; i < runs; i++)
        if (kann_opencl_run(whole, &s[0], &e) != KANN_OK) return fail("run", &e);
    double one = (now_s() - t0) / runs;
    kann_opencl_free(whole);

    /* two instances, each on its own half */
    o.n_parts = 2;
    for (int i = 0; i < 2; i++) {
        o.part = (uint32_t)i;
        if (kann_opencl_open(&half[i], &m, &o, &e) != KANN_OK) return fail("half device", &e);
    }
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++)
            if (kann_opencl_run(half[k], &s[k], &e) != KANN_OK) return fail("run", &e);
    t0 = now_s();
    for (int i = 0; i < runs; i++) {
        for (int k = 0; k < 2; k++)
            if (kann_opencl_start(half[k], &s[k], &e) != KANN_OK) return fail("start", &e);
        for (int k = 0; k < 2; k++)
            if (kann_opencl_wait(half[k], &e) != KANN_OK) return fail("wait", &e);
    }
    double two = (now_s() - t0) / runs;
    printf("one instance on the whole device: %.2f ms per inference, %.1f inferences/s\n",
           one * 1e3, 1.0 / one);
    printf("two instances on two sub-devices: %.2f ms per pair, %.1f inferences/s (x%.2f)\n",
           two * 1e3, 2.0 / two, (2.0 / two) / (1.0 / one));
    for (int k = 0; k < 2; k++)
        kann_opencl_free(half[k]);
    kann_host_arena_free(arenas[0]);
    kann_host_arena_free(arenas[1]);
    kann_host_file_free(&file);
    return 0;
}
