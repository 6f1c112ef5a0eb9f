/* libFuzzer target: kann_model_open on arbitrary bytes and, when the loader accepts them, one
 * run of the model. The loader's promise is "accepted => safe to run": a run that reads or
 * writes outside the arena, the constants or the I/O buffers is a finding. Bytes refused for a
 * CRC are tried again with their CRCs made right, so that mutations reach the structural
 * checks behind the checksums. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kann.h"
#include "kann_format.h"
#include "kann_kernels.h"
#include "kbin_writer.h"

/* Models whose arena is larger than this are opened and validated but not run: the fuzzer's
 * memory limit is about the fuzzer, not the model. */
#define FUZZ_MAX_ARENA ((uint64_t)64 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Models whose kernels would do more loop steps than this are validated but not run. The
 * time a run takes is bounded only by the model's sizes (schemas/safety.md, "What the loader
 * does not bound"), which allow far more work than one fuzzing iteration should spend. */
#define FUZZ_MAX_WORK 1e7 /* loop steps: an accepted model near 1e8 took 16 s under ASan */

static double min_d(double a, double b) {
    return a < b ? a : b;
}

/* Steps of a 2-D window's tap loops: each row inside the input (at most min(k_h, h_in)) runs
 * its column loop (at most min(k_w, w_in) taps inside), even when that loop is empty. */
static double taps(double k_h, double h_in, double k_w, double w_in) {
    return min_d(k_h, h_in) * (1.0 + min_d(k_w, w_in));
}

/* Loop steps of one validated record: a generous upper bound from its extents, counting the
 * outer loops too. Taps of a window that fall outside the input are skipped, so at most
 * min(k, n_in) of them count. A kernel family this harness does not know yields infinity (the
 * model is then not run). */
static double record_work(uint32_t kernel, const void *args) {
    const kann_tile *t = args;
    double tile = (double)t->end - t->begin;
    switch (kernel) {
    case KANN_KERNEL_F32_CONV2D:
    case KANN_KERNEL_F32_DWCONV2D: {
        const kann_conv2d_args *a = args;
        double channels = t->axis == 0 ? tile : a->c_out, rows = t->axis == 1 ? tile : a->h_out;
        return a->n *
               (1.0 + channels * (1.0 + rows * (1.0 + a->w_out * (1.0 + (a->c_in / a->group) *
                                                                   taps(a->k_h, a->h_in, a->k_w,
                                                                        a->w_in)))));
    }
    case KANN_KERNEL_F32_MATMUL: {
        const kann_matmul_args *a = args;
        double rows = t->axis == 0 ? tile : a->m, cols = t->axis == 1 ? tile : a->n;
        return a->batch * (1.0 + rows * (1.0 + cols * (a->k + 2.0)));
    }
    case KANN_KERNEL_F32_BINARY:
    case KANN_KERNEL_F32_TRANSPOSE:
    case KANN_KERNEL_F32_ACT:
        return tile;
    case KANN_KERNEL_F32_CHANNEL_AFFINE: {
        const kann_channel_affine_args *a = args;
        return tile * (1.0 + a->inner);
    }
    case KANN_KERNEL_F32_POOL2D: {
        const kann_pool2d_args *a = args;
        return (1.0 + a->w_out) *
               (1.0 + tile * a->h_out * (1.0 + taps(a->k_h, a->h_in, a->k_w, a->w_in)));
    }
    case KANN_KERNEL_F32_GLOBAL_AVGPOOL: {
        const kann_global_avgpool_args *a = args;
        return tile * (1.0 + a->spatial);
    }
    case KANN_KERNEL_F32_POINTWISE_LANES: {
        const kann_pointwise_lanes_args *a = args;
        double other = a->tile.axis == 0 ? a->hw : a->c_out;
        return (1.0 + tile) * (1.0 + other * (1.0 + a->c_in));
    }
    case KANN_KERNEL_F32_POINTWISE_GAP: {
        const kann_pointwise_gap_args *a = args;
        return (1.0 + tile) * (1.0 + a->hw * (1.0 + a->c_in));
    }
    case KANN_KERNEL_F32_SOFTMAX: {
        const kann_softmax_args *a = args;
        return tile * (1.0 + 4.0 * a->axis_len * a->inner);
    }
    case KANN_KERNEL_F32_COPY: {
        const kann_copy_args *a = args;
        return tile * (1.0 + a->row_len);
    }
    case KANN_KERNEL_F32_CONV2D_PACKED: {
        const kann_conv2d_packed_args *a = args;
        double pixels = (double)a->h_out * a->w_out;
        double channels = t->axis == 0 ? tile : a->c_out;
        if (t->axis == 1) pixels = tile;
        /* the gather (K floats per pixel), then every panel of 12 against every pixel */
        double k = (double)a->c_in * a->k_h * a->k_w;
        return (1.0 + pixels) * (1.0 + k) * (2.0 + channels + KANN_CONV_PANEL);
    }
    case KANN_KERNEL_F32_CONV2D_WINOGRAD: {
        const kann_conv2d_winograd_args *a = args;
        double tiles =
            t->axis == 1 ? tile : ((double)a->h_out + 1) / 2 * (((double)a->w_out + 1) / 2);
        double channels = t->axis == 0 ? tile : a->c_out;
        /* per block of 32 tiles: the input transform, 16 GEMMs per panel, the output transform */
        return (1.0 + tiles / 32) * 16.0 * 32.0 * (1.0 + a->c_in) *
               (2.0 + channels + KANN_CONV_PANEL);
    }
    case KANN_KERNEL_F32_REDUCE: {
        const kann_reduce_args *a = args;
        double reduced = 1.0;
        for (uint32_t d = 0; d < a->red_rank && d < KANN_MAX_RANK; d++)
            reduced *= a->red_dims[d];
        return tile * (1.0 + 2.0 * reduced + a->red_rank);
    }
    case KANN_KERNEL_F32_NORM: {
        const kann_norm_args *a = args;
        return tile * (1.0 + 3.0 * a->len);
    }
    case KANN_KERNEL_F32_HARDMAX: {
        const kann_softmax_args *a = args;
        return tile * (1.0 + 2.0 * a->axis_len * a->inner);
    }
    case KANN_KERNEL_STRIDED_COPY: {
        const kann_strided_copy_args *a = args;
        return tile * (1.0 + a->rank);
    }
    case KANN_KERNEL_GATHER: {
        const kann_gather_args *a = args;
        return tile * (1.0 + a->inner);
    }
    case KANN_KERNEL_GATHER_ELEMENTS: {
        const kann_gather_elements_args *a = args;
        return tile * (1.0 + a->rank);
    }
    case KANN_KERNEL_TRILU: {
        const kann_trilu_args *a = args;
        return tile * (1.0 + a->cols);
    }
    case KANN_KERNEL_CUMSUM: {
        const kann_cumsum_args *a = args;
        return tile * (1.0 + a->len);
    }
    case KANN_KERNEL_TOPK: { /* each element may move every kept one down */
        const kann_topk_args *a = args;
        return tile * (1.0 + a->len * (2.0 + a->k));
    }
    case KANN_KERNEL_PAD: {
        const kann_pad_args *a = args;
        double row = a->rank >= 1 && a->rank <= KANN_MAX_RANK ? a->dims[a->rank - 1] : 0;
        return tile * (1.0 + a->rank + row);
    }
    case KANN_KERNEL_F32_PAD2D: {
        const kann_pad2d_args *a = args;
        return tile * (1.0 + a->w_out);
    }
    case KANN_KERNEL_F32_CONV_TRANSPOSE: {
        const kann_conv_transpose_args *a = args;
        double out = (double)a->out[0] * a->out[1] * a->out[2];
        /* every loop level counts, an empty inner loop too */
        double spread =
            1.0 + (double)a->in[0] *
                      (1.0 + (double)a->k[0] *
                                 (1.0 + (double)a->in[1] *
                                            (1.0 + (double)a->k[1] *
                                                       (1.0 + (double)a->in[2] *
                                                                  (1.0 + (double)a->k[2])))));
        return tile * (2.0 + 2.0 * out + (double)(a->c_in / (a->group ? a->group : 1)) * spread);
    }
    case KANN_KERNEL_F32_CONV_ND: {
        const kann_conv_nd_args *a = args;
        double out = (double)a->out[0] * a->out[1] * a->out[2];
        /* every tap of an axis is tested, the inner axes only under taps inside the input */
        double taps =
            1.0 + a->k[0] +
            min_d(a->k[0], a->in[0]) * (1.0 + a->k[1] + min_d(a->k[1], a->in[1]) * (1.0 + a->k[2]));
        return tile * (1.0 + out * (1.0 + (double)(a->c_in / (a->group ? a->group : 1)) * taps));
    }
    case KANN_KERNEL_F32_POOL_ND: {
        const kann_pool_nd_args *a = args;
        double out = (double)a->out[0] * a->out[1] * a->out[2];
        /* the tap ranges are found by stepping through the window, both of them */
        double scan = 2.0 * ((double)a->k[0] + a->k[1] + a->k[2]);
        double taps = (1.0 + min_d(a->k[0], a->in[0])) * (1.0 + min_d(a->k[1], a->in[1])) *
                      (1.0 + min_d(a->k[2], a->in[2]));
        return tile * (1.0 + out * (1.0 + scan + taps));
    }
    case KANN_KERNEL_F32_RESIZE: {
        const kann_resize_args *a = args;
        return tile * (1.0 + (double)a->h_out *
                                 (1.0 + (double)a->w_out * (1.0 + (double)a->taps_h * a->taps_w)));
    }
    case KANN_KERNEL_F32_LRN: {
        const kann_lrn_args *a = args;
        return tile * (1.0 + (double)a->inner * (1.0 + min_d(a->size, a->c)));
    }
    case KANN_KERNEL_F32_NLL_LOSS: {
        const kann_nll_loss_args *a = args;
        return a->reduction == KANN_LOSS_NONE ? tile : 1.0 + (double)a->n * a->inner;
    }
    case KANN_KERNEL_SCATTER_ELEMENTS: {
        const kann_scatter_elements_args *a = args;
        double count = 1.0;
        for (uint32_t d = 0; d < a->rank && d < KANN_MAX_RANK; d++)
            count *= a->dims[d];
        return tile * (1.0 + count * (1.0 + a->rank));
    }
    case KANN_KERNEL_SCATTER_ND: {
        const kann_scatter_nd_args *a = args;
        return tile * (1.0 + (double)a->n_tuples * (1.0 + a->k + a->slice_len));
    }
    case KANN_KERNEL_GATHER_ND: {
        const kann_gather_nd_args *a = args;
        return tile * (1.0 + a->k + a->slice_len);
    }
    case KANN_KERNEL_UNARY:
    case KANN_KERNEL_BINARY_TYPED:
    case KANN_KERNEL_TERNARY:
    case KANN_KERNEL_CAST:
        return tile;
    default:
        return 1.0 / 0.0;
    }
}

static double model_work(const kann_model *m) {
    const kann_record *r = m->records;
    double work = 0;
    for (uint32_t i = 0; i < m->n_records; i++)
        if (r[i].kernel != KANN_KERNEL_BARRIER)
            work += 1.0 + record_work(r[i].kernel, m->args + r[i].args_offset);
    return work;
}

/* Opens the model at bytes and, if the loader accepts it, checks what the API says about it and
 * runs it once. */
static void open_and_run(uint8_t *bytes, size_t size, int *crc_refused) {
    kann_model m;
    kann_error e;
    kann_status st = kann_model_open(&m, bytes, size, &e);
    *crc_refused = st == KANN_E_CRC;
    if (st != KANN_OK) {
        if (e.status != st || e.message[0] == '\0') __builtin_trap(); /* a rejection says why */
        return;
    }
    /* Everything the API hands out about an accepted model must be readable. */
    for (uint32_t i = 0; i < kann_model_n_inputs(&m); i++) {
        kann_tensor t;
        if (kann_model_input(&m, i, &t) != KANN_OK || strlen(t.name) > 1024) __builtin_trap();
    }
    for (uint32_t i = 0; i < kann_model_n_outputs(&m); i++) {
        kann_tensor t;
        if (kann_model_output(&m, i, &t) != KANN_OK || strlen(t.name) > 1024) __builtin_trap();
    }
    (void)kann_model_meta(&m, "producer");
    (void)kann_model_record_node(&m, 0);

    uint64_t need = kann_model_arena_size(&m);
    if (need > FUZZ_MAX_ARENA || model_work(&m) > FUZZ_MAX_WORK) return;
    /* Exactly the size the model asks for, so ASan catches a kernel that steps past it. */
    void *arena;
    if (posix_memalign(&arena, 64, need ? (size_t)need : 1) != 0) return;
    memset(arena, 0, need ? (size_t)need : 1);
    kann_session s;
    if (kann_session_init(&s, &m, arena, (size_t)need, &e) != KANN_OK) __builtin_trap();
    for (uint32_t i = 0; i < kann_model_n_inputs(&m); i++) {
        kann_tensor t;
        if (kann_session_input(&s, i, &t) == KANN_OK) memset(t.data, 0x3f, t.size);
    }
    if (kann_session_run(&s, &e) != KANN_OK) __builtin_trap();
    free(arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* The loader wants 8-byte aligned bytes; libFuzzer's buffer has no alignment promise. An
     * exact-size allocation lets ASan see any read past the end of the file. */
    void *mem;
    if (posix_memalign(&mem, 64, size ? size : 1) != 0) return 0;
    uint8_t *bytes = mem;
    if (size) memcpy(bytes, data, size);
    int crc_refused;
    open_and_run(bytes, size, &crc_refused);
    if (crc_refused && kbin_fix_crcs(bytes, size) == 0) open_and_run(bytes, size, &crc_refused);
    free(bytes);
    return 0;
}
