/* The firmware sample: runs a model compiled by kann-c --emit c --c-prefix model on a bare-metal
 * Cortex-M and prints its outputs through semihosting. The arena is a static buffer; the
 * weights and records stay in flash. fw_inputs (made by npy_to_c.py) holds the input data. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kann_format.h"
#include "model.h"

extern const void *const fw_inputs[];
extern const uint32_t fw_input_sizes[];
extern const uint32_t fw_n_inputs;

static _Alignas(64) uint8_t arena[MODEL_ARENA_SIZE];

int main(void) {
    const kann_static_model *m = &model_model;
    uint32_t crc = kann_crc32(0, m->consts, MODEL_WEIGHTS_SIZE);
    printf("kann-fw: arena %u bytes, weights %u bytes, weights crc %s\n",
           (unsigned)MODEL_ARENA_SIZE, (unsigned)MODEL_WEIGHTS_SIZE,
           crc == MODEL_WEIGHTS_CRC32 ? "ok" : "MISMATCH");
    if (crc != MODEL_WEIGHTS_CRC32) return 1;
    if (fw_n_inputs != m->n_inputs) {
        printf("kann-fw: %u input files for %u inputs\n", (unsigned)fw_n_inputs,
               (unsigned)m->n_inputs);
        return 1;
    }
    for (uint32_t i = 0; i < m->n_inputs; i++) {
        kann_tensor t;
        kann_static_input(m, arena, i, &t);
        if (t.size != fw_input_sizes[i]) {
            printf("kann-fw: input %u '%s' takes %u bytes, the data has %u\n", (unsigned)i, t.name,
                   (unsigned)t.size, (unsigned)fw_input_sizes[i]);
            return 1;
        }
        memcpy(t.data, fw_inputs[i], t.size);
    }
    kann_status st = model_run(arena);
    if (st != KANN_OK) {
        printf("kann-fw: run failed: %s\n", kann_status_name(st));
        return 1;
    }
    for (uint32_t i = 0; i < m->n_outputs; i++) {
        kann_tensor t;
        kann_static_output(m, arena, i, &t);
        printf("kann-fw: output %u '%s' [", (unsigned)i, t.name);
        for (uint32_t d = 0; d < t.rank; d++)
            printf("%s%u", d ? "x" : "", (unsigned)t.dims[d]);
        printf("]\n");
        if (t.dtype != KANN_DTYPE_F32) continue;
        const float *v = t.data;
        for (size_t k = 0; k < t.size / sizeof(float); k++)
            printf("kann-fw: %u %u %.9g\n", (unsigned)i, (unsigned)k, (double)v[k]);
    }
    printf("kann-fw: done\n");
    return 0;
}
