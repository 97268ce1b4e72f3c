/* The model live mode computes (issue 25): an MLP of L linear layers,
 * layer i mapping width[i] to width[i + 1] features, each followed by
 * tanh, trained on a synthetic regression batch with the loss
 * 0.5 sum (out - target)^2 summed over the batch (so that microbatch
 * gradients add up to the full batch's). float64, row-major, one sample
 * per row. Weights, inputs and targets come from a seed through a
 * counter-based hash, so every process makes the same numbers without
 * being sent them. Backward is split as the zero-bubble schedules split
 * it: B the input gradient (keeping each layer's dZ), W the weight
 * gradient from the kept inputs and dZ. */
#ifndef PS_MLP_H
#define PS_MLP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mlp {
    int32_t layers;
    const int32_t *width; /* layers + 1 entries */
    uint64_t seed;
    int32_t rows; /* samples per microbatch */
} mlp;

/* Parameters of layer i (weights then biases) and their count. */
int64_t mlp_params(const mlp *m, int32_t i);

/* Layer i's weights (width[i+1] x width[i]) then biases into w. */
void mlp_init_layer(const mlp *m, int32_t i, double *w);

/* Microbatch `mb` of replica j's share of the batch: input rows into x
 * (rows x width[0]) and targets into y (rows x width[layers]). */
void mlp_input(const mlp *m, int32_t j, int32_t mb, double *x);
void mlp_target(const mlp *m, int32_t j, int32_t mb, double *y);

/* Forward of layer i on n rows: a = tanh(x W^T + b), w as mlp_init_layer
 * lays it out. */
void mlp_forward(const mlp *m, int32_t i, const double *w, const double *x,
                 double *a, int32_t n);

/* The loss's gradient at the output: da = a - y (n rows). */
void mlp_loss_grad(const mlp *m, const double *a, const double *y, double *da,
                   int32_t n);

/* B of layer i: from da (the gradient at its output) and its output a,
 * dz = da (1 - a^2) and, when dx is not NULL, dx = dz W. */
void mlp_backward_input(const mlp *m, int32_t i, const double *w,
                        const double *a, const double *da, double *dz,
                        double *dx, int32_t n);

/* W of layer i: g += [dz^T x, sum over rows of dz] (g laid out as w). */
void mlp_backward_weight(const mlp *m, int32_t i, const double *x,
                         const double *dz, double *g, int32_t n);

/* The gradient of every layer over the whole batch at once: replica j's
 * m microbatches as one batch of m x rows samples, summed over the
 * replicas, added into ref (layer l's at off[l], laid out as
 * mlp_init_layer lays out weights), the reference a pipeline's
 * accumulated gradients are held against. Returns 0, or -1 out of
 * memory. */
int mlp_full_gradient(const mlp *m, int32_t replicas, int32_t microbatches,
                      const int64_t *off, double *ref);

#endif
