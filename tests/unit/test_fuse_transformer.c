/* kc_fuse_transformer (run by kc_pass_fuse): a MatMul's constant bias Add becomes its third
 * input, a scalar Div / Mul its alpha, GELU's Erf formula its activation, and the residual Add
 * after them its epilogue; the matmul kernel variants' vector epilogue (row bias, residual,
 * GELU) against the reference. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kann_kernels.h"
#include "kernel_variants.h"
#include "pass_graph.h"
#include "passes.h"

typedef struct fixture {
    kc_graph *g;
    kc_diag d;
    kc_stats st;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->g = kc_graph_new();
    kc_diag_init(&f->d, "test.onnx", stderr);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    kc_graph_free(f->g);
    free(f);
    return 0;
}

enum { S = 4, K = 8, N = 6 };

/* x [1,S,K] (a graph input) times a constant [K,N] into a new value t [1,S,N]. */
static int add_matmul(kc_graph *g, int x, const char *name, int *t) {
    int64_t wdims[2] = {K, N};
    float w[K * N] = {0};
    int ins[2] = {x, pg_const(g, kc_sprintf(g, "%s.w", name), 2, wdims, w)};
    *t = pg_value(g, name, 3, 1, S, N);
    return pg_node1(g, KC_OP_MatMul, 2, ins, *t);
}

static int hidden(kc_graph *g, const char *name) {
    return pg_value(g, name, 3, 1, S, N);
}

static int bias_vector(kc_graph *g, const char *name) {
    int64_t dims[1] = {N};
    float b[N] = {1, 2, 3, 4, 5, 6};
    return pg_const(g, name, 1, dims, b);
}

static int add2(kc_graph *g, int op, int a, int b, int y) {
    int ins[2] = {a, b};
    return pg_node1(g, op, 2, ins, y);
}

static void bias_add_becomes_matmul_bias_on_either_side(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    for (int side = 0; side < 2; side++) {
        int x = pg_input(g, pg_value(g, kc_sprintf(g, "x%d", side), 3, 1, S, K));
        int t, b = bias_vector(g, kc_sprintf(g, "b%d", side));
        int y = pg_output(g, hidden(g, kc_sprintf(g, "y%d", side)));
        int mm = add_matmul(g, x, kc_sprintf(g, "t%d", side), &t);
        int add = side ? add2(g, KC_OP_Add, b, t, y) : add2(g, KC_OP_Add, t, b, y);
        assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
        const kc_node *n = &g->nodes[mm];
        assert_true(g->nodes[add].dead);
        assert_int_equal(n->n_inputs, 3);
        assert_int_equal(n->inputs[0], x);
        assert_int_equal(n->inputs[2], b);
        assert_int_equal(n->outputs[0], y);
        assert_int_equal(g->values[y].producer, mm);
        assert_int_equal(g->values[t].producer, -1);
        assert_string_equal(n->fused, "Add");
        assert_int_equal(f->st.affines_folded, side + 1);
        assert_int_equal(kc_verify(g, &f->d), 0);
    }
}

/* The bias Add fused, the residual Add after it becomes the residual epilogue. */
static void bias_then_residual(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, pg_value(g, "x", 3, 1, S, K));
    int r = pg_input(g, hidden(g, "r"));
    int t, u = hidden(g, "u"), y = pg_output(g, hidden(g, "y"));
    int mm = add_matmul(g, x, "t", &t);
    add2(g, KC_OP_Add, t, bias_vector(g, "b"), u);
    add2(g, KC_OP_Add, r, u, y);
    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    const kc_node *n = &g->nodes[mm];
    assert_int_equal(n->n_inputs, 3);
    assert_int_equal(n->epi.residual, r);
    assert_int_equal(n->outputs[0], y);
    assert_string_equal(n->fused, "Add, Add");
    assert_int_equal(f->st.residuals_fused, 1);
    assert_int_equal(kc_count_live_nodes(g), 1);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

/* Cases the bias fusion must leave alone: the MatMul keeps 2 inputs. */
typedef enum bias_case {
    BIAS_NOT_CONSTANT,           /* the bias is a graph input */
    BIAS_OTHER_AXIS,             /* [S,1]: one value per row, not per column */
    BIAS_FULL,                   /* [1,S,N]: varies over rows */
    BIAS_SHARED_INTERMEDIATE,    /* the MatMul output has a second reader */
    BIAS_INTERMEDIATE_IS_OUTPUT, /* the MatMul output is requested by the caller */
    BIAS_CASES
} bias_case;

static void bias_add_left_alone(void **state) {
    for (int c = 0; c < BIAS_CASES; c++) {
        fixture *f = *state;
        kc_graph_free(f->g);
        f->g = kc_graph_new();
        memset(&f->st, 0, sizeof f->st);
        kc_graph *g = f->g;
        int x = pg_input(g, pg_value(g, "x", 3, 1, S, K));
        int t, b, y = pg_output(g, hidden(g, "y"));
        int mm = add_matmul(g, x, "t", &t);
        float data[S * N] = {0};
        if (c == BIAS_NOT_CONSTANT) {
            b = pg_input(g, pg_value(g, "b", 1, N));
        } else if (c == BIAS_OTHER_AXIS) {
            int64_t dims[2] = {S, 1};
            b = pg_const(g, "b", 2, dims, data);
        } else if (c == BIAS_FULL) {
            int64_t dims[3] = {1, S, N};
            b = pg_const(g, "b", 3, dims, data);
        } else {
            b = bias_vector(g, "b");
        }
        int add = add2(g, KC_OP_Add, t, b, y);
        if (c == BIAS_SHARED_INTERMEDIATE) {
            int z = pg_output(g, hidden(g, "z"));
            pg_node1(g, KC_OP_Relu, 1, &t, z);
        }
        if (c == BIAS_INTERMEDIATE_IS_OUTPUT) pg_output(g, t);
        assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
        /* A full-shape constant is still a residual epilogue (pass_fuse), never a bias. */
        if ((c != BIAS_FULL && g->nodes[add].dead) || g->nodes[mm].n_inputs != 2)
            fail_msg("bias case %d was fused", c);
        assert_int_equal(f->st.affines_folded, 0);
        assert_int_equal(kc_verify(g, &f->d), 0);
    }
}

/* Attention scores: MatMul of two activations, then Div by sqrt(d) (or Mul by its inverse). */
static void scale_becomes_matmul_alpha(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    for (int c = 0; c < 2; c++) {
        int q = pg_input(g, pg_value(g, kc_sprintf(g, "q%d", c), 3, 2, S, K));
        int k = pg_input(g, pg_value(g, kc_sprintf(g, "k%d", c), 3, 2, K, S));
        int t = pg_value(g, kc_sprintf(g, "t%d", c), 3, 2, S, S);
        int y = pg_output(g, pg_value(g, kc_sprintf(g, "y%d", c), 3, 2, S, S));
        int ins[2] = {q, k};
        int mm = pg_node1(g, KC_OP_MatMul, 2, ins, t);
        int sc = c ? add2(g, KC_OP_Mul, pg_scalar(g, "inv", 0.25f), t, y)
                   : add2(g, KC_OP_Div, t, pg_scalar(g, "sqrt_d", 4.0f), y);
        assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
        assert_true(g->nodes[sc].dead);
        assert_int_equal(g->nodes[mm].outputs[0], y);
        assert_true(kc_attr_find(&g->nodes[mm], "alpha") != NULL);
        assert_float_equal(kc_attr_float(&g->nodes[mm], "alpha", 1.0f), 0.25f, 0.0f);
        assert_string_equal(g->nodes[mm].fused, c ? "Mul" : "Div");
        assert_int_equal(kc_verify(g, &f->d), 0);
    }
}

/* A scalar divided by the product, a tensor divisor, a shared product: no alpha. */
static void scale_left_alone(void **state) {
    for (int c = 0; c < 3; c++) {
        fixture *f = *state;
        kc_graph_free(f->g);
        f->g = kc_graph_new();
        kc_graph *g = f->g;
        int x = pg_input(g, pg_value(g, "x", 3, 1, S, K));
        int t, y = pg_output(g, hidden(g, "y"));
        int mm = add_matmul(g, x, "t", &t);
        if (c == 0) add2(g, KC_OP_Div, pg_scalar(g, "one", 1.0f), t, y);
        if (c == 1) add2(g, KC_OP_Div, t, pg_input(g, pg_value(g, "s", 1, N)), y);
        if (c == 2) {
            add2(g, KC_OP_Div, t, pg_scalar(g, "two", 2.0f), y);
            pg_output(g, t);
        }
        assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
        if (kc_attr_find(&g->nodes[mm], "alpha")) fail_msg("scale case %d was fused", c);
        assert_int_equal(kc_count_live_nodes(g), 2);
    }
}

/* MatMul + bias, then y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) as exporters write
 * GELU. Returns the MatMul's node; *out is the last Mul's output, nodes[6] the pattern's nodes
 * in order (bias Add, Div, Erf, Add, Mul, Mul). */
typedef struct gelu_graph {
    int mm, x, out, nodes[6];
} gelu_graph;

static gelu_graph build_gelu(kc_graph *g, float divisor, float one, float half) {
    gelu_graph r;
    int in = pg_input(g, pg_value(g, "in", 3, 1, S, K));
    int t;
    r.mm = add_matmul(g, in, "t", &t);
    r.x = hidden(g, "x");
    int dv = hidden(g, "d"), ev = hidden(g, "e"), av = hidden(g, "a"), hv = hidden(g, "h");
    r.out = pg_output(g, hidden(g, "y"));
    r.nodes[0] = add2(g, KC_OP_Add, t, bias_vector(g, "b"), r.x);
    r.nodes[1] = add2(g, KC_OP_Div, r.x, pg_scalar(g, "sqrt2", divisor), dv);
    r.nodes[2] = pg_node1(g, KC_OP_Erf, 1, &dv, ev);
    r.nodes[3] = add2(g, KC_OP_Add, pg_scalar(g, "one", one), ev, av);
    r.nodes[4] = add2(g, KC_OP_Mul, r.x, av, hv);
    r.nodes[5] = add2(g, KC_OP_Mul, hv, pg_scalar(g, "half", half), r.out);
    return r;
}

static void erf_gelu_becomes_matmul_activation(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    gelu_graph r = build_gelu(g, 1.4142135381698608f, 1.0f, 0.5f);
    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    const kc_node *n = &g->nodes[r.mm];
    for (int i = 0; i < 6; i++)
        assert_true(g->nodes[r.nodes[i]].dead);
    assert_int_equal(n->epi.act, KANN_ACT_GELU);
    assert_int_equal(n->n_inputs, 3);
    assert_int_equal(n->outputs[0], r.out);
    assert_int_equal(g->values[r.out].producer, r.mm);
    assert_int_equal(g->values[r.x].producer, -1);
    assert_string_equal(n->fused, "Add, Gelu");
    assert_int_equal(f->st.activations_fused, 1);
    assert_int_equal(kc_count_live_nodes(g), 1);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

/* Constants that make it some other function (left alone), and x read outside the formula
 * (one Gelu node of its own, x stays the MatMul's output). */
static void erf_gelu_left_alone(void **state) {
    const float consts[4][3] = {{2.0f, 1.0f, 0.5f},
                                {1.4142135f, 2.0f, 0.5f},
                                {1.4142135f, 1.0f, 0.25f},
                                {1.4142135f, 1.0f, 0.5f}};
    for (int c = 0; c < 4; c++) {
        fixture *f = *state;
        kc_graph_free(f->g);
        f->g = kc_graph_new();
        memset(&f->st, 0, sizeof f->st);
        kc_graph *g = f->g;
        gelu_graph r = build_gelu(g, consts[c][0], consts[c][1], consts[c][2]);
        if (c == 3) pg_output(g, r.x);
        assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
        if (g->nodes[r.mm].epi.act == KANN_ACT_GELU) fail_msg("gelu case %d was fused", c);
        const kc_node *e = &g->nodes[r.nodes[2]];
        assert_false(e->dead);
        if (c == 3) {
            assert_int_equal(e->op, KC_OP_Gelu);
            assert_int_equal(e->inputs[0], r.x);
            assert_int_equal(e->outputs[0], r.out);
            assert_int_equal(g->values[r.out].producer, r.nodes[2]);
            assert_int_equal(kc_count_live_nodes(g), 2);
        } else {
            assert_int_equal(e->op, KC_OP_Erf);
        }
        assert_int_equal(kc_verify(g, &f->d), 0);
    }
}

/* ---- the matmul variants' epilogue: row bias, residual, GELU -------------------------------- */

static uint64_t rng_state = 7;

static uint32_t rng_range(uint32_t lo, uint32_t hi) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return lo + (uint32_t)(z % ((uint64_t)hi - lo + 1));
}

/* The activations a transformer or CNN layer fuses into a matmul, in double from libm. */
static const int epilogue_acts[] = {KANN_ACT_GELU,    KANN_ACT_GELU_TANH, KANN_ACT_TANH,
                                    KANN_ACT_SIGMOID, KANN_ACT_SILU,      KANN_ACT_HARD_SWISH,
                                    KANN_ACT_RELU,    KANN_ACT_NONE};

static double epilogue_act(int kind, double s) {
    switch (kind) {
    case KANN_ACT_GELU:
        return 0.5 * s * (1.0 + erf(s / sqrt(2.0)));
    case KANN_ACT_GELU_TANH:
        return 0.5 * s * (1.0 + tanh(sqrt(2.0 / M_PI) * (s + 0.044715 * s * s * s)));
    case KANN_ACT_TANH:
        return tanh(s);
    case KANN_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-s));
    case KANN_ACT_SILU:
        return s / (1.0 + exp(-s));
    case KANN_ACT_HARD_SWISH:
        return s * fmin(1.0, fmax(0.0, s / 6.0 + 0.5));
    case KANN_ACT_RELU:
        return s > 0 ? s : 0;
    default:
        return s;
    }
}

/* Every variant against y = act(x W + bias + residual) in double, over ragged row blocks and
 * column chunks, values wide enough to reach erf's and tanh's saturation, each activation of
 * epilogue_acts in turn (the vector epilogue and, where a kind has no vector form, the scalar
 * one). */
static void matmul_bias_residual_act_variants(void **state) {
    (void)state;
    for (int it = 0; it < 64; it++) {
        int kind = epilogue_acts[it % (int)(sizeof epilogue_acts / sizeof epilogue_acts[0])];
        uint32_t batch = rng_range(1, 3), m = rng_range(1, 14), n = rng_range(1, 140),
                 k = rng_range(1, 40);
        size_t na = (size_t)batch * m * k, nb = (size_t)k * n, ny = (size_t)batch * m * n;
        size_t total = na + nb + n + 3 * ny;
        float *mem = aligned_alloc(64, (total * sizeof(float) + 63) / 64 * 64);
        assert_non_null(mem);
        for (size_t i = 0; i < na + nb + n + ny; i++)
            mem[i] = (float)rng_range(0, 2000) / 250.0f - 4.0f;
        float *A = mem, *B = A + na, *bias = B + nb, *res = bias + n, *y = res + ny;
        double *want = malloc(sizeof(double) * ny);
        assert_non_null(want);
        for (size_t bt = 0; bt < batch; bt++)
            for (size_t i = 0; i < m; i++)
                for (size_t j = 0; j < n; j++) {
                    double s = 0;
                    for (size_t kk = 0; kk < k; kk++)
                        s += (double)A[(bt * m + i) * k + kk] * B[kk * n + j] / 8.0;
                    size_t o = (bt * m + i) * n + j;
                    s += bias[j] + res[o];
                    want[o] = epilogue_act(kind, s);
                }
        kann_matmul_args a = {0};
        a.batch = batch;
        a.m = m;
        a.n = n;
        a.k = k;
        a.a_batch_stride = m * k;
        a.a_row_stride = k;
        a.a_col_stride = 1;
        a.b_row_stride = n; /* b_batch_stride 0: one B for every batch, as a Linear layer */
        a.b_col_stride = 1;
        a.bias_col_stride = 1;
        a.alpha = 0.125f;
        a.beta = 1.0f;
        a.act.kind = (uint32_t)kind;
        a.a = (kann_ref){KANN_SPACE_ARENA, 0, 0};
        a.b = (kann_ref){KANN_SPACE_ARENA, 0, na * sizeof(float)};
        a.bias = (kann_ref){KANN_SPACE_ARENA, 0, (na + nb) * sizeof(float)};
        a.residual = (kann_ref){KANN_SPACE_ARENA, 0, (na + nb + n) * sizeof(float)};
        a.y = (kann_ref){KANN_SPACE_ARENA, 0, (na + nb + n + ny) * sizeof(float)};
        kann_exec ex = {(uint8_t *)mem, (const uint8_t *)mem, NULL, NULL, NULL};
        kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
        int nv = kernel_variants(KANN_KERNEL_F32_MATMUL, vs);
        for (int v = 0; v < nv; v++) {
            for (size_t i = 0; i < ny; i++)
                y[i] = NAN;
            a.tile = (kann_tile){0, 0, m, 0};
            vs[v].fn(&a, &ex);
            for (size_t i = 0; i < ny; i++)
                if (!(fabs(y[i] - want[i]) <= 2e-5 * (1.0 + fabs(want[i]))))
                    fail_msg("%s, act %d: element %zu of %ux%ux%u is %g, want %g", vs[v].isa, kind,
                             i, m, n, k, (double)y[i], want[i]);
        }
        free(want);
        free(mem);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(bias_add_becomes_matmul_bias_on_either_side, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(bias_then_residual, setup, teardown),
        cmocka_unit_test_setup_teardown(bias_add_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(scale_becomes_matmul_alpha, setup, teardown),
        cmocka_unit_test_setup_teardown(scale_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(erf_gelu_becomes_matmul_activation, setup, teardown),
        cmocka_unit_test_setup_teardown(erf_gelu_left_alone, setup, teardown),
        cmocka_unit_test(matmul_bias_residual_act_variants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
