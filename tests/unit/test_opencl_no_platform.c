/* Without any OpenCL platform (the ICD loader pointed at an empty vendor directory before its
 * first call) the OpenCL executor says so instead of crashing or finding nothing silently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opencl_test_main.h"

#include "kann_host.h"
#include "runtime_models.h"

#ifdef KANN_WITH_OPENCL
#include "kann_opencl.h"

static void test_no_platform(void **state) {
    (void)state;
    kann_error e;
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(kann_opencl_list_devices(devnull, &e), KANN_E_NOT_FOUND);
    fclose(devnull);
    assert_non_null(strstr(e.message, "no OpenCL platform"));
    size_t n;
    void *raw = rt_model_relu2(&n);
    void *bin = rt_copy(raw, n);
    free(raw);
    kann_model m;
    assert_int_equal(kann_model_open(&m, bin, n, &e), KANN_OK);
    kann_opencl *x = NULL;
    assert_int_equal(kann_opencl_open(&x, &m, NULL, &e), KANN_E_NOT_FOUND);
    assert_non_null(strstr(e.message, "no OpenCL platform"));
    assert_null(x);
    free(bin);
}

int main(void) {
    /* ocl-icd and the Khronos loader read these once, at the first OpenCL call */
    setenv("OCL_ICD_VENDORS", "/nonexistent-kann-opencl-vendors", 1);
    setenv("OPENCL_VENDOR_PATH", "/nonexistent-kann-opencl-vendors", 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_platform)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
