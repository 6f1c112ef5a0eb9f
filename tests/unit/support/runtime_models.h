/* Small model.bin files for the runtime's tests, built with kbin_writer, and accessors into a
 * finished file's sections for tests that corrupt them. */
#ifndef RUNTIME_MODELS_H
#define RUNTIME_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "kann_format.h"
#include "kann_kernels.h"

/* y = relu(x), x and y [1, 8] float32; two streams of one record each, one phase. */
void *rt_model_relu2(size_t *size);
/* y = a + b, a input [2, 3], b a constant [2, 3] holding 0.5 * (i + 1); one stream. */
void *rt_model_add(size_t *size);
/* y = relu(conv3x3(x, w) + bias), x [1, 2, 5, 5], y [1, 4, 5, 5] (pad 1); two streams tiling
 * output channels. */
void *rt_model_conv(size_t *size);
/* y = relu(W x + bias), a 1x1 conv as pointwise_lanes: x [1, RT_PW_C_IN, RT_PW_HW, 1], y [1,
 * RT_PW_C_OUT, RT_PW_HW, 1]; two streams, output channels [0, 64) and [64, RT_PW_C_OUT). */
#define RT_PW_C_IN 80
#define RT_PW_C_OUT 96
#define RT_PW_HW 45
void *rt_model_pointwise(size_t *size);
/* Four streams, four phases with data crossing streams between phases:
 *   h = relu(x)          (x [1, 64], 16 elements per stream)
 *   z = h . W + bias     (W [64, 32] constant; 8 columns per stream)
 *   u = z + h[0:32]      (8 elements per stream)
 *   y = softmax(u)       (stream 0 only; the others have an empty phase)
 * rt_parallel_reference computes y in double precision. */
void *rt_model_parallel(size_t *size);
void rt_parallel_reference(const float *x, float *y);

/* y = 3x3 max pool (stride 1, no padding) of x [1, RT_POOL_PLANES, RT_POOL_IN, RT_POOL_IN];
 * two streams of one record each, half of the planes each: records large enough for the host
 * pool to share them among threads in parts. */
#define RT_POOL_PLANES 128
#define RT_POOL_IN 64
void *rt_model_maxpool2(size_t *size);

/* The same pool over RT_POOL_PLANES planes as records of a few planes each, all marked
 * KANN_RECORD_FREE, in one phase: stream 0 the first RT_FREE_PLANES0 planes, stream 1 the rest,
 * RT_FREE_RECORDS records each (stream 1's three times the work of stream 0's, each too small
 * for the pool to cut into parts). */
#define RT_FREE_RECORDS 12
#define RT_FREE_PLANES0 32
void *rt_model_free_records(size_t *size);

/* A 64-byte-aligned malloc'd copy of n bytes, followed by at least 64 spare bytes (free() it). */
void *rt_copy(const void *bytes, size_t n);

/* The first section of this kind in a model.bin, or NULL. */
kann_section *rt_section(void *bin, uint32_t kind);
uint8_t *rt_section_bytes(void *bin, uint32_t kind);
/* The records of the STREAMS section and their count. */
kann_record *rt_records(void *bin, uint32_t *n);
kann_stream_desc *rt_stream_descs(void *bin);
/* IO descriptor i (inputs first, then outputs). */
kann_io_desc *rt_io_desc(void *bin, uint32_t i);

#endif
