/* The op table, generated from ops.def, and lookup by (domain, op_type). */
#include <string.h>

#include "ir.h"

const kc_op_info kc_ops[KC_OP_COUNT] = {
    [KC_OP_UNKNOWN] = {"?", 0, 0, "", ""},
#define KC_OP(name, min_opset, max_opset, attrs, dtypes)                                           \
    [KC_OP_##name] = {#name, min_opset, max_opset, attrs, dtypes},
#include "ops.def"
#undef KC_OP
};

kc_op kc_op_lookup(const char *domain, const char *op_type) {
    if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0) return KC_OP_UNKNOWN;
    for (int i = 1; i < KC_OP_COUNT; i++)
        if (strcmp(kc_ops[i].name, op_type) == 0) return (kc_op)i;
    return KC_OP_UNKNOWN;
}
