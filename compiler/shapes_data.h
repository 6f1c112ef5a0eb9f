/* Geometry of the data-movement and spatial ops, shared by their shape functions
 * (shapes_data.c) and their lowering (lower_data.c, lower_spatial.c). */
#ifndef KC_SHAPES_DATA_H
#define KC_SHAPES_DATA_H

#include <stdint.h>

#include "diag.h"
#include "ir.h"

/* An integer list the output shape depends on: attribute attr before opset since (or always
 * when idx < 0), else the constant input idx. Returns the count, -1 if absent, -2 after an
 * error naming the node (a run-time input is one). */
int kc_data_ints(const kc_graph *g, int node, const char *attr, int idx, int since, int64_t *out,
                 int max, kc_diag *d);

/* Split: the normalized axis and each output's length along it. */
int kc_split_of(const kc_graph *g, int node, int64_t *axis, int64_t *sizes, kc_diag *d);

/* Pad: the pads before and after each dim of the data input (negative: crop). */
int kc_pad_of(const kc_graph *g, int node, int64_t *begin, int64_t *end, kc_diag *d);

/* Range: the element count (start, limit and delta constant). */
int kc_range_count(const kc_graph *g, int node, int64_t *count, kc_diag *d);

/* ConvTranspose resolved: explicit pads from pads, output_shape or auto_pad. */
typedef struct kc_conv_transpose {
    int n_spatial;
    int64_t group, c_out;
    int64_t in[3], out[3], kernel[3], stride[3], dilation[3], output_padding[3];
    int64_t pad_begin[3], pad_end[3];
} kc_conv_transpose;
int kc_conv_transpose_of(const kc_graph *g, int node, kc_conv_transpose *ct, kc_diag *d);

enum { KC_RESIZE_NEAREST, KC_RESIZE_LINEAR, KC_RESIZE_CUBIC };
enum {
    KC_RESIZE_HALF_PIXEL,
    KC_RESIZE_ASYMMETRIC,
    KC_RESIZE_PYTORCH_HALF_PIXEL,
    KC_RESIZE_TF_HALF_PIXEL_FOR_NN,
    KC_RESIZE_ALIGN_CORNERS,
    KC_RESIZE_TF_CROP_AND_RESIZE,
    KC_RESIZE_HALF_PIXEL_SYMMETRIC,
    KC_RESIZE_CTM_COUNT
};
enum {
    KC_RESIZE_ROUND_PREFER_FLOOR,
    KC_RESIZE_ROUND_PREFER_CEIL,
    KC_RESIZE_FLOOR,
    KC_RESIZE_CEIL,
    KC_RESIZE_NEAREST_COUNT
};

/* Resize or Upsample resolved: per-dim output length and scale (scales or sizes constant). */
typedef struct kc_resize {
    int rank, mode, ctm, nearest_mode, exclude_outside;
    int legacy; /* Upsample and Resize-10: asymmetric, nearest floors up and ceils down */
    float cubic_a, extrapolation;
    int64_t out[KC_MAX_RANK];
    float scale[KC_MAX_RANK], roi_start[KC_MAX_RANK], roi_end[KC_MAX_RANK];
} kc_resize;
int kc_resize_of(const kc_graph *g, int node, kc_resize *rs, kc_diag *d);

#endif
