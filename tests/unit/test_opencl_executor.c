/* The OpenCL executor on whatever device the machine has (PoCL in CI): small models give the
 * CPU walker's outputs with one queue and with sub-device queues; the program binary cache is
 * written, reused and survives a damaged file; bad devices, bad programs, kernels the backend
 * lacks and models too big for the device get clear errors. Skipped without an OpenCL device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "opencl_test_main.h"

#include "kann_format.h"
#include "kann_host.h"
#include "runtime_models.h"

#ifdef KANN_WITH_OPENCL
#include "opencl_internal.h"

static int have_device(void) {
    FILE *devnull = fopen("/dev/null", "w");
    kann_error e;
    int ok = kann_opencl_list_devices(devnull, &e) == KANN_OK;
    fclose(devnull);
    return ok;
}

#define NEED_DEVICE()                                                                              \
    do {                                                                                           \
        if (!have_device()) skip();                                                                \
    } while (0)

typedef struct loaded {
    void *bin;
    size_t size;
    kann_model model;
    void *arena;
    kann_session session;
} loaded;

static void load(loaded *l, void *(*make)(size_t *)) {
    void *raw = make(&l->size);
    l->bin = rt_copy(raw, l->size);
    free(raw);
    kann_error e;
    assert_int_equal(kann_model_open(&l->model, l->bin, l->size, &e), KANN_OK);
    l->arena = kann_host_arena_alloc((size_t)kann_model_arena_size(&l->model));
    assert_non_null(l->arena);
    assert_int_equal(kann_session_init(&l->session, &l->model, l->arena,
                                       (size_t)kann_model_arena_size(&l->model), &e),
                     KANN_OK);
}

static void unload(loaded *l) {
    kann_host_arena_free(l->arena);
    free(l->bin);
}

/* Inputs i * 0.37 - 3 (wrapping), run on the CPU walker and on OpenCL: outputs agree. */
static void check_against_cpu_style(void *(*make)(size_t *), uint32_t max_queues, const char *cache,
                                    const char *style) {
    loaded cpu, ocl;
    load(&cpu, make);
    load(&ocl, make);
    for (uint32_t i = 0; i < kann_model_n_inputs(&cpu.model); i++) {
        kann_tensor a, b;
        kann_session_input(&cpu.session, i, &a);
        kann_session_input(&ocl.session, i, &b);
        for (size_t k = 0; k < a.size / 4; k++)
            ((float *)a.data)[k] = ((float *)b.data)[k] = (float)(k % 17) * 0.37f - 3.0f;
    }
    kann_error e;
    assert_int_equal(kann_session_run(&cpu.session, &e), KANN_OK);
    kann_opencl_options o = {0};
    o.max_queues = max_queues;
    o.cache_dir = cache;
    o.kernels = style;
    kann_opencl *x;
    if (kann_opencl_open(&x, &ocl.model, &o, &e) != KANN_OK) fail_msg("open: %s", e.message);
    if (max_queues == 1) assert_int_equal(kann_opencl_n_queues(x), 1);
    for (int run = 0; run < 2; run++) { /* a second run on the same executor */
        if (kann_opencl_run(x, &ocl.session, &e) != KANN_OK) fail_msg("run: %s", e.message);
        for (uint32_t i = 0; i < kann_model_n_outputs(&cpu.model); i++) {
            kann_tensor a, b;
            kann_session_output(&cpu.session, i, &a);
            kann_session_output(&ocl.session, i, &b);
            for (size_t k = 0; k < a.size / 4; k++) {
                float u = ((float *)a.data)[k], v = ((float *)b.data)[k];
                if (!(u - v <= 1e-4f * (1.0f + (u < 0 ? -u : u)) &&
                      v - u <= 1e-4f * (1.0f + (u < 0 ? -u : u))))
                    fail_msg("output %u[%zu]: cpu %g, opencl %g (queues %u)", i, k, u, v,
                             kann_opencl_n_queues(x));
            }
        }
    }
    kann_opencl_free(x);
    unload(&cpu);
    unload(&ocl);
}

static void check_against_cpu(void *(*make)(size_t *), uint32_t max_queues, const char *cache) {
    check_against_cpu_style(make, max_queues, cache, NULL);
}

static void test_parallel_model_all_queues(void **state) {
    (void)state;
    NEED_DEVICE();
    check_against_cpu(rt_model_parallel, 0, "");
}

static void test_parallel_model_one_queue(void **state) {
    (void)state;
    NEED_DEVICE();
    check_against_cpu(rt_model_parallel, 1, "");
}

static void test_small_models(void **state) {
    (void)state;
    NEED_DEVICE();
    check_against_cpu(rt_model_conv, 0, "");
    check_against_cpu(rt_model_relu2, 0, "");
    check_against_cpu(rt_model_add, 0, "");
}

static void count_files(const char *dir, int *n, char *one, size_t one_size) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls %s 2>/dev/null", dir);
    FILE *p = popen(cmd, "r");
    char line[256];
    *n = 0;
    while (p && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        if (*n == 0) snprintf(one, one_size, "%s/%s", dir, line);
        (*n)++;
    }
    if (p) pclose(p);
}

static void test_binary_cache(void **state) {
    (void)state;
    NEED_DEVICE();
    char dir[] = "/tmp/kann-opencl-cache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[600];
    snprintf(sub, sizeof sub, "%s/nested/dir", dir); /* created on demand */
    loaded l;
    load(&l, rt_model_conv);
    kann_opencl_options o = {0};
    o.cache_dir = sub;
    kann_error e;
    kann_opencl *x;
    uint32_t built, cached;
    assert_int_equal(kann_opencl_open(&x, &l.model, &o, &e), KANN_OK);
    kann_opencl_program_counts(x, &built, &cached);
    assert_true(built > 0);
    assert_int_equal(cached, 0);
    kann_opencl_free(x);
    int n_files;
    char file[1024];
    count_files(sub, &n_files, file, sizeof file);
    assert_int_equal(n_files, (int)built);

    assert_int_equal(kann_opencl_open(&x, &l.model, &o, &e), KANN_OK);
    kann_opencl_program_counts(x, &built, &cached);
    assert_int_equal(built, 0);
    assert_true(cached > 0);
    kann_opencl_free(x);

    /* a damaged cache file is rebuilt, not trusted */
    FILE *f = fopen(file, "r+b");
    assert_non_null(f);
    fseek(f, 40, SEEK_SET);
    fputs("garbage", f);
    fclose(f);
    assert_int_equal(kann_opencl_open(&x, &l.model, &o, &e), KANN_OK);
    kann_opencl_program_counts(x, &built, &cached);
    assert_int_equal(built, 1);
    kann_opencl_free(x);
    check_against_cpu(rt_model_conv, 0, sub);

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    unload(&l);
}

static void test_cache_key(void **state) {
    (void)state;
    NEED_DEVICE();
    cl_platform_id p;
    cl_device_id d;
    assert_int_equal(clGetPlatformIDs(1, &p, NULL), CL_SUCCESS);
    assert_int_equal(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL), CL_SUCCESS);
    char a[1200], b[1200], c[1200], none[16];
    kann_ocl_cache_path(d, "kernel void k() {}", "-DX=1", "/c", a, sizeof a);
    kann_ocl_cache_path(d, "kernel void k() {}", "-DX=2", "/c", b, sizeof b);
    kann_ocl_cache_path(d, "kernel void k() { }", "-DX=1", "/c", c, sizeof c);
    kann_ocl_cache_path(d, "kernel void k() {}", "-DX=1", "", none, sizeof none);
    assert_true(strncmp(a, "/c/", 3) == 0);
    assert_string_not_equal(a, b);
    assert_string_not_equal(a, c);
    assert_string_equal(none, "");
    char buf[256];
    assert_null(kann_ocl_cache_dir("", buf, sizeof buf));
    assert_string_equal(kann_ocl_cache_dir("/x/y", buf, sizeof buf), "/x/y");
    setenv("KANN_OPENCL_CACHE", "/from/env", 1);
    assert_string_equal(kann_ocl_cache_dir(NULL, buf, sizeof buf), "/from/env");
    unsetenv("KANN_OPENCL_CACHE");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    assert_string_equal(kann_ocl_cache_dir(NULL, buf, sizeof buf), "/xdg/kann");
    unsetenv("XDG_CACHE_HOME");
}

static void test_unknown_device(void **state) {
    (void)state;
    NEED_DEVICE();
    loaded l;
    load(&l, rt_model_relu2);
    kann_opencl_options o = {0};
    kann_opencl *x = NULL;
    kann_error e;
    o.device = "no-such-device-anywhere";
    assert_int_equal(kann_opencl_open(&x, &l.model, &o, &e), KANN_E_NOT_FOUND);
    assert_non_null(strstr(e.message, "no-such-device-anywhere"));
    assert_null(x);
    o.device = "999";
    assert_int_equal(kann_opencl_open(&x, &l.model, &o, &e), KANN_E_NOT_FOUND);
    assert_non_null(strstr(e.message, "999"));
    o.device = "0";
    assert_int_equal(kann_opencl_open(&x, &l.model, &o, &e), KANN_OK);
    kann_opencl_free(x);
    unload(&l);
}

static void test_build_failure_has_log(void **state) {
    (void)state;
    NEED_DEVICE();
    cl_platform_id p;
    cl_device_id d;
    assert_int_equal(clGetPlatformIDs(1, &p, NULL), CL_SUCCESS);
    assert_int_equal(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL), CL_SUCCESS);
    cl_int rc;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &rc);
    assert_non_null(ctx);
    cl_program prog = NULL;
    int cached;
    kann_error e;
    const char *bad = "kernel void k(global float *y) { y[0] = undeclared_name; }";
    assert_int_equal(kann_ocl_build_program(ctx, &d, 1, bad, "", NULL, &prog, &cached, &e),
                     KANN_E_RUNTIME);
    assert_null(prog);
    assert_non_null(strstr(e.message, "build failed"));
    assert_non_null(strstr(e.message, "undeclared_name")); /* from the build log */
    const char *good = "kernel void k(global float *y) { y[0] = 1.0f; }";
    assert_int_equal(kann_ocl_build_program(ctx, &d, 1, good, "", NULL, &prog, &cached, &e),
                     KANN_OK);
    assert_int_equal(cached, 0);
    clReleaseProgram(prog);
    clReleaseContext(ctx);
}

static void test_both_kernel_styles(void **state) {
    (void)state;
    NEED_DEVICE();
    /* the CPU-style and the GPU-style kernels run on any device: both must match */
    check_against_cpu_style(rt_model_conv, 0, "", "cpu");
    check_against_cpu_style(rt_model_conv, 1, "", "gpu");
    check_against_cpu_style(rt_model_parallel, 0, "", "gpu");
}

static void test_kernel_the_backend_lacks(void **state) {
    (void)state;
    kann_ocl_launch l;
    kann_error e;
    uint8_t args[512] = {0};
    assert_int_equal(kann_ocl_plan_launch(KANN_KERNEL_COUNT + 5, args, CL_DEVICE_TYPE_CPU, &l, &e),
                     KANN_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "no kernel"));
    /* a known kernel with an empty tile launches nothing */
    assert_int_equal(kann_ocl_plan_launch(KANN_KERNEL_F32_ACT, args, CL_DEVICE_TYPE_CPU, &l, &e),
                     KANN_OK);
    assert_int_equal(l.global[0], 0);
    assert_non_null(strstr(kann_ocl_error_name(CL_OUT_OF_RESOURCES), "OUT_OF_RESOURCES"));
    assert_int_equal(kann_ocl_fail(&e, CL_MEM_OBJECT_ALLOCATION_FAILURE, "x"), KANN_E_RUNTIME);
    assert_non_null(strstr(e.message, "out of device memory"));
}

static void test_model_too_big_for_device(void **state) {
    (void)state;
    NEED_DEVICE();
    loaded l;
    void *raw = rt_model_relu2(&l.size);
    l.bin = rt_copy(raw, l.size);
    free(raw);
    kann_file_header *h = l.bin;
    h->arena_size = (uint64_t)1 << 52; /* 4 PiB of arena */
    h->header_crc = kann_crc32(0, h, 60);
    kann_error e;
    assert_int_equal(kann_model_open(&l.model, l.bin, l.size, &e), KANN_OK);
    kann_opencl *x = NULL;
    assert_int_equal(kann_opencl_open(&x, &l.model, NULL, &e), KANN_E_RUNTIME);
    assert_non_null(strstr(e.message, "out of device memory"));
    assert_null(x);
    free(l.bin);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parallel_model_all_queues),
        cmocka_unit_test(test_parallel_model_one_queue),
        cmocka_unit_test(test_small_models),
        cmocka_unit_test(test_binary_cache),
        cmocka_unit_test(test_cache_key),
        cmocka_unit_test(test_unknown_device),
        cmocka_unit_test(test_build_failure_has_log),
        cmocka_unit_test(test_both_kernel_styles),
        cmocka_unit_test(test_kernel_the_backend_lacks),
        cmocka_unit_test(test_model_too_big_for_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
