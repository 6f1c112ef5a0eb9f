/* dwconv2d reference kernel and validator: a depthwise convolution is a conv2d whose group
 * count equals its channel counts, so the conv2d reference computes it as it is. */
#include "kann_kernels.h"
#include "kann_msg.h"

void kann_f32_dwconv2d_ref(const void *args, const kann_exec *ex) {
    kann_f32_conv2d_ref(args, ex);
}

kann_status kann_dwconv2d_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_dwconv2d_args *a = args;
    if (a->group != a->c_in || a->c_out != a->c_in) {
        kann_msg_set(err, KANN_E_CORRUPT, "dwconv2d: group ");
        kann_msg_append_u64(err, a->group);
        kann_msg_append(err, " must equal c_in and c_out");
        return KANN_E_CORRUPT;
    }
    return kann_conv2d_validate(args, b, err);
}
