/* hardmax reference kernel: the softmax argument struct and validator (kann_softmax_args), with
 * y = 1 at the first maximum along the axis and 0 elsewhere. */
#include "kann_kernels.h"

void kann_f32_hardmax_ref(const void *args, const kann_exec *ex) {
    const kann_softmax_args *a = args;
    size_t axis_len = a->axis_len, inner = a->inner;
    if (a->tile.begin >= a->tile.end || axis_len == 0 || inner == 0) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    /* Column by column, every read of a column before its writes: y may equal x. */
    for (size_t o = a->tile.begin; o < a->tile.end; o++) {
        for (size_t i = 0; i < inner; i++) {
            const float *xc = x + o * axis_len * inner + i;
            float *yc = y + o * axis_len * inner + i;
            size_t at = 0;
            float best = xc[0];
            for (size_t k = 1; k < axis_len; k++)
                if (xc[k * inner] > best) {
                    best = xc[k * inner];
                    at = k;
                }
            for (size_t k = 0; k < axis_len; k++)
                yc[k * inner] = k == at ? 1.0f : 0.0f;
        }
    }
}
