/* The MLP of live mode: plain loops in float64, the same in every process
 * (live/mlp.h). The matrix loops run row by row over contiguous memory;
 * no BLAS, so that a result is the same bit for bit wherever it runs. */
#include "live/mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1) from (seed, a, b, c). */
static double draw(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t z = mix(seed ^ mix(a ^ mix(b * 0x100000001b3ull ^ mix(c))));
    return (double)(z >> 11) * 0x1p-53 * 2 - 1;
}

int64_t mlp_params(const mlp *m, int32_t i)
{
    return (int64_t)m->width[i + 1] * (m->width[i] + 1);
}

void mlp_init_layer(const mlp *m, int32_t i, double *w)
{
    int32_t in = m->width[i], out = m->width[i + 1];
    double scale = 1.0 / sqrt((double)in);
    for (int64_t k = 0; k < (int64_t)out * in; k++)
        w[k] = scale * draw(m->seed, 1, (uint64_t)i, (uint64_t)k);
    for (int32_t k = 0; k < out; k++)
        w[(int64_t)out * in + k] =
            0.1 * draw(m->seed, 2, (uint64_t)i, (uint64_t)k);
}

static void fill(const mlp *m, uint64_t what, int32_t j, int32_t mb, double *v,
                 int32_t cols)
{
    for (int32_t r = 0; r < m->rows; r++) {
        uint64_t sample = ((uint64_t)j << 40) ^ ((uint64_t)mb * m->rows + r);
        for (int32_t c = 0; c < cols; c++)
            v[(int64_t)r * cols + c] = draw(m->seed, what, sample, (uint64_t)c);
    }
}

void mlp_input(const mlp *m, int32_t j, int32_t mb, double *x)
{
    fill(m, 3, j, mb, x, m->width[0]);
}

void mlp_target(const mlp *m, int32_t j, int32_t mb, double *y)
{
    fill(m, 4, j, mb, y, m->width[m->layers]);
}

void mlp_forward(const mlp *m, int32_t i, const double *w, const double *x,
                 double *a, int32_t n)
{
    int32_t in = m->width[i], out = m->width[i + 1];
    const double *b = w + (int64_t)out * in;
    for (int32_t r = 0; r < n; r++) {
        const double *xr = x + (int64_t)r * in;
        for (int32_t o = 0; o < out; o++) {
            const double *wo = w + (int64_t)o * in;
            double s = b[o];
            for (int32_t k = 0; k < in; k++)
                s += xr[k] * wo[k];
            a[(int64_t)r * out + o] = tanh(s);
        }
    }
}

void mlp_loss_grad(const mlp *m, const double *a, const double *y, double *da,
                   int32_t n)
{
    int64_t cnt = (int64_t)n * m->width[m->layers];
    for (int64_t k = 0; k < cnt; k++)
        da[k] = a[k] - y[k];
}

void mlp_backward_input(const mlp *m, int32_t i, const double *w,
                        const double *a, const double *da, double *dz,
                        double *dx, int32_t n)
{
    int32_t in = m->width[i], out = m->width[i + 1];
    for (int64_t k = 0; k < (int64_t)n * out; k++)
        dz[k] = da[k] * (1 - a[k] * a[k]);
    if (!dx)
        return;
    memset(dx, 0, (size_t)n * (size_t)in * sizeof *dx);
    for (int32_t r = 0; r < n; r++) {
        double *dxr = dx + (int64_t)r * in;
        const double *dzr = dz + (int64_t)r * out;
        for (int32_t o = 0; o < out; o++) {
            const double *wo = w + (int64_t)o * in;
            double g = dzr[o];
            for (int32_t k = 0; k < in; k++)
                dxr[k] += g * wo[k];
        }
    }
}

void mlp_backward_weight(const mlp *m, int32_t i, const double *x,
                         const double *dz, double *g, int32_t n)
{
    int32_t in = m->width[i], out = m->width[i + 1];
    double *gb = g + (int64_t)out * in;
    for (int32_t r = 0; r < n; r++) {
        const double *xr = x + (int64_t)r * in;
        const double *dzr = dz + (int64_t)r * out;
        for (int32_t o = 0; o < out; o++) {
            double *go = g + (int64_t)o * in;
            double d = dzr[o];
            for (int32_t k = 0; k < in; k++)
                go[k] += d * xr[k];
            gb[o] += d;
        }
    }
}

int mlp_full_gradient(const mlp *md, int32_t replicas, int32_t m,
                      const int64_t *off, double *ref)
{
    int32_t L = md->layers, n = m * md->rows;
    mlp big = *md;
    big.rows = n;
    double **a = calloc((size_t)L + 1, sizeof *a);
    double **dz = calloc((size_t)L + 1, sizeof *dz);
    int64_t maxp = 0;
    for (int32_t l = 0; l < L; l++)
        if (mlp_params(md, l) > maxp)
            maxp = mlp_params(md, l);
    double *w = malloc((size_t)maxp * 8 + 8);
    int rc = a && dz && w ? 0 : -1;
    for (int32_t l = 0; l <= L && rc == 0; l++)
        if (!(a[l] = malloc((size_t)n * (size_t)md->width[l] * 8 + 8)))
            rc = -1;
    for (int32_t l = 0; l < L && rc == 0; l++)
        if (!(dz[l] = malloc((size_t)n * (size_t)md->width[l + 1] * 8 + 8)))
            rc = -1;
    for (int32_t j = 0; j < replicas && rc == 0; j++) {
        for (int32_t mb = 0; mb < m; mb++) { /* the whole batch */
            mlp_input(md, j, mb,
                      a[0] + (size_t)mb * md->rows * (size_t)md->width[0]);
            mlp_target(md, j, mb,
                       dz[L - 1] +
                           (size_t)mb * md->rows * (size_t)md->width[L]);
        }
        for (int32_t l = 0; l < L && rc == 0; l++) {
            mlp_init_layer(md, l, w);
            mlp_forward(&big, l, w, a[l], a[l + 1], n);
        }
        /* dz[L - 1] holds the targets: the loss's gradient over it */
        if (rc == 0)
            mlp_loss_grad(&big, a[L], dz[L - 1], dz[L - 1], n);
        for (int32_t l = L - 1; l >= 0 && rc == 0; l--) {
            mlp_init_layer(md, l, w);
            mlp_backward_input(&big, l, w, a[l + 1], dz[l], dz[l],
                               l ? dz[l - 1] : NULL, n);
            mlp_backward_weight(&big, l, a[l], dz[l], ref + off[l], n);
        }
    }
    for (int32_t l = 0; a && l <= L; l++)
        free(a[l]);
    for (int32_t l = 0; dz && l < L; l++)
        free(dz[l]);
    free(a);
    free(dz);
    free(w);
    return rc;
}
