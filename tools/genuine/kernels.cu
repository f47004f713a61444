// Small CUDA kernels the genuine-fixture tools compile to PTX (nvcc -ptx) and give to the REAL
// Neutrino probe engine. Names follow what the suite's -k filters expect (attn, spin, ...).
#include <mma.h>

// block_sched target: a zero fill like torch.zeros (one store per thread).
extern "C" __global__ void zero_fill(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.0f;
}

// dmat / gmem_bytes targets: global loads and stores, like an attention tile loop; one entry per
// name the suite's -k filters look for (attn: Triton FA-2, flash: SDPA flash, fmha: SDPA mem-efficient).
#define ATTENTION_LIKE(NAME)                                                               \
    extern "C" __global__ void NAME(float* o, const float* q, const float* k, int n, int steps) { \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (i >= n) return;                                                                \
        float acc = 0.0f;                                                                  \
        for (int s = 0; s < steps; ++s) acc += q[i] * k[(i + s * 97) % n];                 \
        o[i] = acc;                                                                        \
    }
ATTENTION_LIKE(attn_fwd)
ATTENTION_LIKE(flash_fwd_kernel)
ATTENTION_LIKE(fmha_fwd_kernel)

// tensorop_count / tensorop target: one warp-wide 16x16x16 fp16 MMA (mma.sync in PTX on sm_80).
extern "C" __global__ void mma_gemm(const half* a, const half* b, float* c) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// A grouped-GEMM stand-in whose name matches the suite's -k gmm filter (Table 2, Fig. 12).
extern "C" __global__ void gmm_kernel(float* c, const float* a, const float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i] + c[i];
}

// warp_sched target: a compute loop whose name matches the collector's -k spin filter.
extern "C" __global__ void spin_kernel(float* out, int iters) {
    float x = threadIdx.x;
    for (int i = 0; i < iters; ++i) x = x * 1.0001f + 0.5f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

// Register-heavy kernels for Table 2's extra-register column (kernel_overhead). ptxas allocates
// each build (pruned, probed, countd) on its own, and for kernels like these it gives the
// dmat-probed build FEWER registers than the pruned original: the probe's code between the loads
// stops ptxas from keeping every load in flight at once.

// ~128 registers: 96 independent accumulators, each fed by its own global load per step.
#define ILP_SUM_WIDTH 96
extern "C" __global__ void ilp_sum(float* out, const float* in, int n, int steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[ILP_SUM_WIDTH];
#pragma unroll
    for (int u = 0; u < ILP_SUM_WIDTH; ++u) acc[u] = 0.0f;
    for (int s = 0; s < steps; ++s) {
#pragma unroll
        for (int u = 0; u < ILP_SUM_WIDTH; ++u) acc[u] += in[(s * ILP_SUM_WIDTH + u) * n + i];
    }
    float total = 0.0f;
#pragma unroll
    for (int u = 0; u < ILP_SUM_WIDTH; ++u) total += acc[u] * (u + 1);
    out[i] = total;
}

// ~32 registers: a 17-point 1-D stencil, all neighbours loaded before the weighted sum.
#define STENCIL_RADIUS 8
extern "C" __global__ void stencil_1d(float* out, const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x + STENCIL_RADIUS;
    if (i >= n - STENCIL_RADIUS) return;
    float total = 0.0f;
#pragma unroll
    for (int r = -STENCIL_RADIUS; r <= STENCIL_RADIUS; ++r) total += in[i + r] * (1.0f + r * r);
    out[i] = total;
}
