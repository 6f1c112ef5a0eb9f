/* The back half of the pipeline: lower (nodes → kernel calls), schedule (calls → tiles over P
 * record streams), plan (values → arena offsets) and emit (model.bin). */
#ifndef KC_LOWER_H
#define KC_LOWER_H

#include <stdint.h>

#include "diag.h"
#include "ir.h"
#include "passes.h"

#define KC_MAX_FIXUPS 12

/* A kann_ref field inside an argument struct that points at (part of) a value; the planner's
 * offsets are patched in by the emitter. */
typedef struct kc_fixup {
    uint32_t field; /* byte offset of the kann_ref inside the argument struct */
    int value; /* value index */
    int64_t byte_offset; /* inside the value */
    /* > 0: the kernel touches only these bytes from byte_offset (a group's slice, kc_bind_slice);
     * 0: a binding with an offset of its own may touch all of the value's root. */
    int64_t byte_len;
    int write; /* the kernel writes it */
    /* A scratch every tile along axis 0 writes whole (kc_bind_scratch): the value holds this
     * many equal copies, and stream st's records along axis 0 address copy st (tiles along
     * axis 1 write disjoint parts of copy 0). 0: not such a scratch. */
    int copies;
    /* copies > 0: every tile, along either axis, writes the scratch whole, and stream st's
     * records address copy st whatever their axis (kc_bind_scratch_private). */
    int private_all;
} kc_fixup;

/* One kernel call: a whole layer; the scheduler cuts it into tiles. */
typedef struct kc_call {
    int kernel; /* kann_kernel_id */
    int node; /* source node, -1 for calls the compiler added (output copies) */
    void *args; /* kann_<family>_args with tile = {axis 0, 0, extents[0]} */
    uint32_t args_size;
    int n_fixups;
    kc_fixup fixups[KC_MAX_FIXUPS];
    uint32_t extents[2]; /* per tile axis; 0 for an axis the kernel lacks */
    uint32_t granules[2]; /* a tile along the axis is a multiple of this (but the last) */
    double macs; /* multiply-adds (or elements) it does, for the summary and the schedule */
    /* Elements every tile along axis 0 produces whole, whatever its share (the gathered or
     * transformed input of a conv split along output channels), for the schedule. */
    double axis0_whole;
    /* Bit a: a part of a granule along axis a costs the schedule as much as a whole one. */
    uint8_t whole_granules;
    /* The tile axis the schedule must take (-1: its choice). */
    int8_t fixed_axis;
    /* >= 0: the call runs whole on this stream (a part of a sum whose terms the streams
     * compute side by side, kc_lower_conv); -1: cut into tiles across the streams. */
    int stream;
} kc_call;

/* Streams a program may be scheduled on. */
#define KC_MAX_STREAMS 256

/* Streams a pointwise conv may be summed across (lower_conv.c). */
#define KC_MAX_SUM_STREAMS 8

enum { KC_FUSE_NONE, KC_FUSE_LANES, KC_FUSE_ALL };

/* How a conv lowers, where the cost model has a choice (kann-c --tune measures them). Its way:
 * the cost model's choice (AUTO), the packed GEMM kernel (conv2d_packed), Winograd F(2x2, 3x3)
 * or F(4x4, 3x3) (3x3 stride-1 convs), or output channels in the lanes (f32_pointwise_lanes:
 * 1x1 convs). And where it leads a fusion (an inverted residual block as one f32_dwblock
 * record, an image stem with its max pool as one f32_conv2d_maxpool, a 1x1 conv with the
 * global average pool after it as one f32_pointwise_gap): FUSED or APART. */
typedef enum kc_pick {
    KC_PICK_AUTO,
    KC_PICK_PACKED,
    KC_PICK_WINO_F2,
    KC_PICK_WINO_F4,
    KC_PICK_LANES,
    KC_PICK_FUSED,
    KC_PICK_APART,
    KC_PICK_COUNT
} kc_pick;

/* The picks of one node: its conv's way (AUTO to KC_PICK_LANES) and the fusion it leads (AUTO,
 * FUSED or APART). */
typedef struct kc_node_picks {
    uint8_t way, fusion;
} kc_node_picks;

typedef struct kc_program {
    kc_call *calls;
    int n_calls, cap_calls;
    /* The streams the schedule will split the calls across (0 reads as 1): a kernel whose
     * records split only coarsely may leave a stream idle, so lowering weighs it. */
    int streams;
    /* Which inverted residual blocks lower to one f32_dwblock call each: none (KC_FUSE_NONE,
     * kann-c --target opencl), those the CPU's lanes path runs faster whole (KC_FUSE_LANES, the
     * default), or every one over large maps (KC_FUSE_ALL, kann-c --fuse-blocks). */
    int fuse_blocks;
    /* Whether a 1x1 conv and the global average pool reading it stay two calls (kann-c --target
     * opencl: on a GPU the conv's GEMM kernel and the pool beat f32_pointwise_gap, whose work-items
     * each read all of x) instead of one f32_pointwise_gap call (0, the default). */
    int keep_heads;
    /* Whether 1x1 convs over small maps stay conv2d_packed calls (kann-c --target opencl: its
     * GEMM kernel) instead of f32_pointwise_lanes (0, the default; see lanes_pays). */
    int keep_pointwise;
    /* Per graph node (n_pick_nodes of them; NULL: all KC_PICK_AUTO), the lowering asked of
     * its conv; where a pick does not apply to a conv (Winograd for a 1x1 one) the cost model
     * chooses. */
    const kc_node_picks *picks;
    int n_pick_nodes;
    /* When non-NULL (n_pick_nodes entries, zeroed by the caller): per node, bit 1 << k for
     * every pick k its conv could take, the picks it took, and for the nodes a fusion would
     * take in the node that leads it, plus one (0: none). */
    uint16_t *pick_options;
    kc_node_picks *picked;
    int *pick_leader;
    /* After kc_schedule_merge_phases on two streams or more (else NULL: one call per phase,
     * or one stream): the first and last call of each call's phase. Calls of one phase run at
     * the same time on different streams, so the memory plan keeps a value alive from the
     * start of the first phase touching it to the end of the last. */
    int *phase_first, *phase_last;
} kc_program;

/* One record of one stream: call index and its tile. tile_end == 0 && call < 0: barrier. */
typedef struct kc_tile_record {
    int call; /* -1 for a barrier */
    uint32_t axis, begin, end;
} kc_tile_record;

typedef struct kc_schedule {
    int n_streams;
    int n_phases;
    kc_tile_record **streams; /* streams[s][0 .. counts[s]) */
    int *counts;
} kc_schedule;

typedef struct kc_plan {
    uint64_t arena_size;
    uint64_t const_size; /* weights referenced by calls */
    int n_consts; /* distinct constant values emitted */
} kc_plan;

/* 6. lower (lower.c): every live node becomes kernel calls; unsupported shapes/dtypes/attribute
 * values are reported for all nodes in one run. Also adds copies for outputs that are
 * constants. */
int kc_lower(kc_graph *g, kc_program *p, kc_diag *d);

/* 7. schedule (schedule.c): each call is cut into at most n_streams tiles, one per stream, along
 * the axis a cost model picks (balance, bytes read that another stream wrote, weights read by
 * every stream); a barrier ends every phase (one phase per call; see 7a). */
/* The tiles of an axis of extent e and granule q on P streams: stream s gets [bounds[s],
 * bounds[s + 1]), whole granules spread evenly. The last e/q % P streams get one more: the
 * last granule may be a part of one, and a stream holding it should not also hold an extra
 * whole one (a 14x14 map's 7 blocks of Winograd tiles: 3 and 3 + a block of 4, not 4 and
 * 2 + the block of 4). */
void kc_spread(uint32_t e, uint32_t q, int P, uint32_t *bounds);
int kc_schedule_program(const kc_graph *g, const kc_program *p, int n_streams, kc_schedule *s,
                        kc_diag *d);

/* 7a. merge phases (schedule.c), on two streams or more: a barrier between two phases goes
 * where the calls since the previous barrier and the next phase's calls share no byte that one
 * of them writes (independent layers next to each other, as the two branches of a fire
 * module); each stream then runs its tiles of both before the next barrier. Records each
 * call's phase as a range of calls (kc_program.phase_first / phase_last) for the memory plan,
 * which keeps every value alive through the phases that touch it. Returns the number of
 * barriers removed. */
int kc_schedule_merge_phases(const kc_graph *g, kc_program *p, kc_schedule *s);

/* 7a'. free records (schedule.c): is_free[i] = 1 for record i of stream st (a call's tile) when
 * no other record of its phase on that stream is of the same call or shares a byte with it that
 * either writes (KANN_RECORD_FREE: any thread may run it, in any order); 0 for barriers, the
 * others, and every record of a single stream (nothing runs beside it). */
void kc_schedule_free_records(const kc_graph *g, const kc_program *p, const kc_schedule *s, int st,
                              uint8_t *is_free);

/* 7b. private scratch (schedule.c): a scratch that every stream has a copy of
 * (kc_bind_scratch) goes back to one copy where the call's tiles do not split along output
 * channels: each stream then writes a part of its own. Returns the bytes saved. */
int64_t kc_schedule_trim_scratch(kc_graph *g, kc_program *p, const kc_schedule *s);

/* 8. plan (plan.c): liveness over calls, views resolved to their root value, offsets in one
 * arena (64-byte aligned, reuse of dead buffers). Sets kc_value.offset for roots in the arena. */
int kc_plan_memory(kc_graph *g, const kc_program *p, kc_plan *plan, kc_diag *d);
/* Where value v's bytes are: its root (following views) and the byte offset inside it. */
int kc_value_root(const kc_graph *g, int v, int64_t *offset);

/* 9. emit (emit.c): model.bin, written atomically (temp file + rename). Returns 0, the number
 * of errors when the model cannot be emitted (refused), or -1 when the file cannot be written.
 * kc_emit_c returns the same way. */
typedef struct kc_emit_options {
    const char *source_path;
    const char *source_hash; /* FNV-1a 64 of the source file, hex */
    const char *options; /* command line options, recorded in the metadata */
    const char *target;  /* the backend the model is compiled for: cpu or opencl */
} kc_emit_options;
int kc_emit_model(const kc_graph *g, const kc_program *p, const kc_schedule *s,
                  const kc_plan *plan, const char *out_path, const kc_emit_options *o,
                  kc_diag *d);
/* The argument struct of record r (stream st) of call c as emitted, every reference resolved
 * (offsets final once the memory plan has run), into buf of at least c->args_size bytes. */
#define KC_MAX_ARGS_BYTES 1024
void kc_call_args(const kc_graph *g, const kc_call *c, const kc_tile_record *r, int st,
                  void *buf);
/* The model.bin bytes kc_emit_model writes, built in memory and accepted by the runtime's
 * loader; *out is malloc'd (free() it). Shared by every emitter. */
int kc_build_model(const kc_graph *g, const kc_program *p, const kc_schedule *s,
                   const kc_plan *plan, const kc_emit_options *o, void **out, size_t *out_size,
                   kc_diag *d);

/* 9'. emit C (emit_c.c): the same model as C source for firmware (kann-c --emit c): OUT.c
 * holds the records as static const data with kernel function pointers, the argument structs
 * and the weights; OUT.h (next to it) the API (see docs/firmware.md). Both written
 * atomically. */
typedef struct kc_emit_c_options {
    const char *prefix; /* C identifier prefixing every symbol; NULL: from out_path */
    const char *weights_blob; /* write the weights to this file instead, linked by .incbin */
} kc_emit_c_options;
int kc_emit_c(const kc_graph *g, const kc_program *p, const kc_schedule *s, const kc_plan *plan,
              const char *out_path, const kc_emit_options *o, const kc_emit_c_options *co,
              kc_diag *d);

void kc_program_free(kc_program *p);
void kc_schedule_free(kc_schedule *s);

#endif
