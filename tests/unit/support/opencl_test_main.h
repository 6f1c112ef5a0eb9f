/* The parts every OpenCL test file shares that do not need OpenCL itself: the main of a build
 * without OpenCL (one test, skipped), and the main of a kernel test that runs its cases in both
 * kernel styles. Include after <cmocka.h>. */
#ifndef KANN_TEST_OPENCL_TEST_MAIN_H
#define KANN_TEST_OPENCL_TEST_MAIN_H

/* main() of a test file built without OpenCL: the whole file is one skipped test. */
#define KT_MAIN_WITHOUT_OPENCL()                                                                   \
    static void test_built_without_opencl(void **state) {                                          \
        (void)state;                                                                               \
        skip();                                                                                    \
    }                                                                                              \
    int main(void) {                                                                               \
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_built_without_opencl)};           \
        return cmocka_run_group_tests(tests, NULL, NULL);                                          \
    }

/* Two tests, test_<name>_cpu and test_<name>_gpu, each running run_cases(style) on the OpenCL
 * device (skipped without one) in that kernel style, and main() running both. */
#define KT_BOTH_STYLES_MAIN(name, run_cases)                                                       \
    static void test_##name##_cpu(void **state) {                                                  \
        (void)state;                                                                               \
        KT_NEED_DEVICE();                                                                          \
        run_cases(CL_DEVICE_TYPE_CPU);                                                             \
    }                                                                                              \
    static void test_##name##_gpu(void **state) {                                                  \
        (void)state;                                                                               \
        KT_NEED_DEVICE();                                                                          \
        run_cases(CL_DEVICE_TYPE_GPU);                                                             \
    }                                                                                              \
    int main(void) {                                                                               \
        const struct CMUnitTest tests[] = {                                                        \
            cmocka_unit_test(test_##name##_cpu),                                                   \
            cmocka_unit_test(test_##name##_gpu),                                                   \
        };                                                                                         \
        return cmocka_run_group_tests(tests, NULL, NULL);                                          \
    }

#endif
