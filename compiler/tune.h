/* kann-c --tune: the cost model's choice of lowering for each conv, refined by measuring the
 * candidates on the build machine. The driver (main.c) compiles the model once with every conv
 * left to the cost model and once for each other way some conv could take (kc_pick), every conv
 * asked to take it; kc_tune_measure runs the compiled models interleaved and times each node's
 * records; kc_tune_choose keeps, per conv, the way that measured fastest. */
#ifndef KC_TUNE_H
#define KC_TUNE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diag.h"
#include "lower.h"

/* One compiled candidate: its model.bin bytes and, per record of its streams in file order
 * (barriers included), the graph node its call came from (-1: none). */
typedef struct kc_tune_candidate {
    void *bytes;
    size_t size;
    int *node_of_record;
    int n_records;
    kc_pick ask;           /* asked of every conv (KC_PICK_AUTO: the cost model's choices) */
    kc_node_picks *picked; /* per node: what its conv took (kc_program.picked) */
    int *leader;           /* per node: the leader of a fusion it would join, plus one */
} kc_tune_candidate;

/* The candidate's record-to-node table from its schedule (kc_tune_candidate.node_of_record). */
int *kc_tune_record_nodes(const kc_program *p, const kc_schedule *s, int *n_records);

/* Runs the candidates one after another, round after round, single-threaded, each record alone
 * and timed: warm-up rounds, then as many timed rounds as fit in about budget_s seconds (at
 * least KC_TUNE_MIN_RUNS, at most KC_TUNE_MAX_RUNS). ms[c * n_nodes + node]: the median over
 * the rounds of the node's time in candidate c, a round's time being the largest over the
 * streams of the node's records' sum in it (its phase on P cores); negative where c has no
 * record of the node. total_ms[c] (may be NULL): the median of a round's sum over the nodes.
 * Returns the timed rounds, or 0 with an error in d. */
#define KC_TUNE_MIN_RUNS 7
#define KC_TUNE_MAX_RUNS 101
int kc_tune_measure(const kc_tune_candidate *c, int n_candidates, int n_nodes, double budget_s,
                    double *ms, double *total_ms, kc_diag *d);

/* A candidate must measure this much faster than the cost model's choice to replace it: on a
 * shared host two equal kernels measure a few percent apart. */
#define KC_TUNE_MARGIN 0.05

/* Whether a node's options (kc_program.pick_options) hold a choice of a fusion (fusion) or of
 * its conv's way: two ways or more. */
int kc_tune_decides(unsigned options, int fusion);

/* picks[node] (n_nodes, zeroed by the caller): for every choice the cost model had (of a conv's
 * way, of a fusion), the pick that measured fastest where it beat the cost model's own
 * (candidate 0) by KC_TUNE_MARGIN; else KC_PICK_AUTO. A way's time is the node's in the
 * candidate that asked every conv for it, where the node took it (a conv's lowering may also
 * follow its neighbours': the partial sums of a pointwise conv on several streams); a fusion's,
 * that of the node leading it and of every node it takes, fused or apart. Prints a line for
 * each choice to out (NULL: quiet). Returns the choices changed. */
int kc_tune_choose(const kc_graph *g, const kc_tune_candidate *c, int n_candidates,
                   const uint16_t *options, int n_nodes, const double *ms, kc_node_picks *picks,
                   FILE *out);

/* "auto", "packed", "winograd-f2", "winograd-f4", "lanes", "fused", "apart". */
const char *kc_pick_name(kc_pick k);

#endif
