/* Validators against argument structs that once passed although their kernel would divide by
 * zero or form a pointer from an unchecked reference (schemas/safety.md); each case next to a
 * control the validator must accept, so that a rejection for another reason cannot pass. And a
 * kernel whose work was bounded by no tensor size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "kann_kernels.h"

enum { ARENA_BYTES = 4096, CONST_BYTES = 1024 };

static const kann_bounds bounds = {ARENA_BYTES, CONST_BYTES};

static kann_status validate(kann_kernel_id kernel, const void *args) {
    kann_error err;
    memset(&err, 0, sizeof err);
    kann_status s = kann_kernels[kernel].validate(args, &bounds, &err);
    if (s != KANN_OK) assert_true(err.message[0] != '\0'); /* a rejection says why */
    return s;
}

static kann_ref arena_at(uint64_t offset) {
    return (kann_ref){KANN_SPACE_ARENA, 0, offset};
}

/* Wrap padding maps every visited row's coordinates into the input dims with a remainder: an
 * empty input dim must be refused even when the output has no element (its last dim is 0) but
 * the tile still visits rows. */
static void test_pad_wrap_of_empty_input(void **state) {
    (void)state;
    kann_pad_args a = {0};
    a.elem_size = 4, a.rank = 2, a.mode = KANN_PAD_CONSTANT;
    a.dims[0] = 2, a.dims[1] = 0; /* two rows of nothing */
    a.x_dims[0] = 0, a.x_dims[1] = 3;
    a.x = arena_at(0);
    a.y = arena_at(64);
    a.tile = (kann_tile){0, 0, 2, 0};
    assert_int_equal(validate(KANN_KERNEL_PAD, &a), KANN_OK); /* constant: no coordinate maps */
    /* ... and it runs without touching anything */
    uint8_t arena[ARENA_BYTES];
    kann_exec ex = {arena, arena, NULL, NULL, NULL};
    kann_pad_ref(&a, &ex);

    for (uint32_t mode = KANN_PAD_REFLECT; mode < KANN_PAD_COUNT; mode++) {
        a.mode = mode;
        assert_int_equal(validate(KANN_KERNEL_PAD, &a), KANN_E_CORRUPT);
    }
    a.tile = (kann_tile){0, 1, 1, 0}; /* an empty tile visits no row */
    assert_int_equal(validate(KANN_KERNEL_PAD, &a), KANN_OK);
}

/* The wide (implicit GEMM) path of conv2d_packed sizes its pixel blocks by c_in. */
static void test_conv2d_packed_without_input_channels(void **state) {
    (void)state;
    kann_conv2d_packed_args a = {0};
    a.c_in = 1, a.h_in = 4, a.w_in = 4, a.c_out = 12;
    a.h_out = 3, a.w_out = 3, a.k_h = 2, a.k_w = 2; /* stride 1, no padding: the wide path */
    a.stride_h = a.stride_w = a.dil_h = a.dil_w = 1;
    a.x = arena_at(0);               /* 1 x 4 x 4 floats */
    a.w = arena_at(64);              /* 1 panel x 12 x K = 4 floats */
    a.y = arena_at(64 + 12 * 4 * 4); /* 12 x 9 floats */
    a.bias = a.residual = a.scratch = (kann_ref){KANN_SPACE_NONE, 0, 0};
    a.tile = (kann_tile){0, 0, 12, 0};
    assert_int_equal(validate(KANN_KERNEL_F32_CONV2D_PACKED, &a), KANN_OK);
    a.c_in = 0;
    assert_int_equal(validate(KANN_KERNEL_F32_CONV2D_PACKED, &a), KANN_E_CORRUPT);
}

/* An empty scatter_elements still forms its pointers: they must come from checked references. */
static void test_empty_scatter_elements_references(void **state) {
    (void)state;
    kann_scatter_elements_args a = {0};
    a.elem_size = 4, a.idx_size = 8, a.rank = 2, a.axis = 1, a.axis_len = 3;
    a.dims[0] = 0, a.dims[1] = 2;
    a.y_strides[0] = 3, a.y_strides[1] = 1;
    a.idx = arena_at(0), a.updates = arena_at(64), a.y = arena_at(128);
    a.tile = (kann_tile){0, 0, 1, 0};
    assert_int_equal(validate(KANN_KERNEL_SCATTER_ELEMENTS, &a), KANN_OK);
    a.y = (kann_ref){KANN_SPACE_COUNT, 0, 0};
    assert_int_equal(validate(KANN_KERNEL_SCATTER_ELEMENTS, &a), KANN_E_CORRUPT);
    a.y = arena_at(128);
    a.idx = arena_at((uint64_t)1 << 62);
    assert_int_equal(validate(KANN_KERNEL_SCATTER_ELEMENTS, &a), KANN_E_CORRUPT);
    a.idx = arena_at(0);
    a.updates = (kann_ref){KANN_SPACE_ARENA, 0, ARENA_BYTES + 4};
    assert_int_equal(validate(KANN_KERNEL_SCATTER_ELEMENTS, &a), KANN_E_CORRUPT);
}

static void test_empty_gather_elements_references(void **state) {
    (void)state;
    kann_gather_elements_args a = {0};
    a.elem_size = 4, a.idx_size = 8, a.rank = 2, a.axis = 1, a.axis_len = 3;
    a.dims[0] = 0, a.dims[1] = 2;
    a.x_strides[0] = 3, a.x_strides[1] = 1;
    a.x = arena_at(0), a.idx = arena_at(64), a.y = arena_at(128);
    a.tile = (kann_tile){0, 0, 0, 0};
    assert_int_equal(validate(KANN_KERNEL_GATHER_ELEMENTS, &a), KANN_OK);
    a.x = (kann_ref){KANN_SPACE_COUNT + 1, 0, 0};
    assert_int_equal(validate(KANN_KERNEL_GATHER_ELEMENTS, &a), KANN_E_CORRUPT);
    a.x = arena_at(0);
    a.y = (kann_ref){KANN_SPACE_CONST, 0, 0}; /* an output in the constants */
    assert_int_equal(validate(KANN_KERNEL_GATHER_ELEMENTS, &a), KANN_E_CORRUPT);
    a.y = arena_at(128);
    a.idx = arena_at(UINT64_MAX - 3);
    assert_int_equal(validate(KANN_KERNEL_GATHER_ELEMENTS, &a), KANN_E_CORRUPT);
}

/* pool_nd's window is bounded by no tensor: a window of 2^32 - 1 taps around a 1-element input,
 * almost all of them in the padding, must cost about as much as a small one. */
static void test_pool_nd_huge_window_is_cheap(void **state) {
    (void)state;
    kann_pool_nd_args a = {0};
    a.kind = KANN_POOL_AVG, a.count_include_pad = 1, a.planes = 1;
    for (int d = 0; d < 3; d++) {
        a.in[d] = a.out[d] = a.k[d] = a.stride[d] = a.dil[d] = 1;
    }
    a.k[0] = UINT32_MAX, a.pad_begin[0] = UINT32_MAX - 1, a.pad_end[0] = 0;
    a.x = arena_at(0), a.y = arena_at(64);
    a.indices = (kann_ref){KANN_SPACE_NONE, 0, 0};
    a.tile = (kann_tile){0, 0, 1, 0};
    assert_int_equal(validate(KANN_KERNEL_F32_POOL_ND, &a), KANN_OK);
    float arena[32] = {0};
    arena[0] = 3.0f;
    kann_exec ex = {(uint8_t *)arena, (const uint8_t *)arena, NULL, NULL, NULL};
    clock_t start = clock();
    kann_f32_pool_nd_ref(&a, &ex);
    double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
    assert_true(seconds < 0.25); /* stepping through the window takes several seconds */
    /* one tap (the last) lands on the input; the padding before it counts as well */
    assert_true(arena[16] == 3.0f / (float)(UINT32_MAX - 0 - 0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pad_wrap_of_empty_input),
        cmocka_unit_test(test_conv2d_packed_without_input_channels),
        cmocka_unit_test(test_empty_scatter_elements_references),
        cmocka_unit_test(test_empty_gather_elements_references),
        cmocka_unit_test(test_pool_nd_huge_window_is_cheap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
