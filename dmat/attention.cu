// DMAT's workload kernels (Fig. 1, Fig. 10): two attention forward kernels with the memory access
// order of PyTorch's SDPA back ends -- each block loads its Q tile first, streams K/V tiles through
// shared memory, and writes its O tile at the end. Compiled to PTX (nvcc -ptx -arch=compute_80,
// neutrino_ae/workloads/ptx_build.py) so Neutrino can probe them; PyTorch's own kernels are SASS only.
//
// Tensors: q, k, v, o fp16, contiguous (B, H, N, 64); head dim 64 fixed; non-causal; softmax in fp32
// (online, as FlashAttention: running row max m and sum l, O rescaled by exp(m_old - m_new)).
//
// | kernel           | stands in for                                   | signature                                      | grid                  | block | smem  |
// |------------------|-------------------------------------------------|------------------------------------------------|-----------------------|-------|-------|
// | flash_fwd_kernel | SDPA flash (flash_fwd_kernel, FlashAttention-2) | (const __half* q, const __half* k,             | (ceil(N/64), B*H)     | 128   | 40 KB |
// |                  |                                                 |  const __half* v, __half* o, int n_ctx,        |                       |       |       |
// |                  |                                                 |  float scale)                                  |                       |       |       |
// | fmha_fwd_kernel  | SDPA memory-efficient (xformers / cutlass fmha, | same                                           | (ceil(N/32), B*H)     | 128   | 40 KB |
// |                  |  fmha_cutlassF)                                 |                                                |                       |       |       |
//
// flash_fwd_kernel: 64 query rows per block, 4 warps x 16 rows, K/V tiles of 64 rows; QK^T and PV on
//   tensor cores (wmma 16x16x16 -> wmma.mma.sync), fp32 accumulators.
// fmha_fwd_kernel: 32 query rows per block, 4 threads per row (each owns 16 of the 64 output columns),
//   K/V tiles of 128 rows; scalar fp32 FMAs (no tensor cores); P overwrites the K tile in shared memory.
// Both: scale is the softmax scale (1/sqrt(64) for SDPA's default); rows past n_ctx are neither
// read nor written (their tile rows are zero-filled in shared memory, their keys masked to -inf).

#include <cuda_fp16.h>
#include <mma.h>

#define HEAD_DIM 64

// Copy `rows` rows of 64 halves (row-major, from `src`, rows valid below `valid`) into shared memory
// with 16-byte loads; rows at or past `valid` are zero-filled so the MMA reads no garbage.
__device__ __forceinline__ void load_tile(__half* dst, const __half* src, int rows, int valid) {
    const int chunks = rows * (HEAD_DIM / 8);  // 8 halves per uint4
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
        const int row = c / (HEAD_DIM / 8);
        uint4 val = make_uint4(0, 0, 0, 0);
        if (row < valid) val = reinterpret_cast<const uint4*>(src)[c];
        reinterpret_cast<uint4*>(dst)[c] = val;
    }
}

// ------------------------------------------------------------------------------------ flash_fwd_kernel

#define FLASH_BM 64  // query rows per block
#define FLASH_BN 64  // K/V rows per tile

extern "C" __global__ void __launch_bounds__(128)
flash_fwd_kernel(const __half* q, const __half* k, const __half* v, __half* o, int n_ctx, float scale) {
    using namespace nvcuda;
    __shared__ __align__(32) __half ks[FLASH_BN * HEAD_DIM];      // K tile (Q tile first, staged here)
    __shared__ __align__(32) __half vs[FLASH_BN * HEAD_DIM];      // V tile
    __shared__ __align__(32) float sbuf[4][16 * FLASH_BN];        // per warp: S = QK^T, then the PV product
    __shared__ __align__(32) __half pbuf[4][16 * FLASH_BN];       // per warp: P = exp(S - m) in fp16

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long head = (long long)blockIdx.y * n_ctx * HEAD_DIM;
    const int q0 = blockIdx.x * FLASH_BM;
    float* s_w = sbuf[warp];
    __half* p_w = pbuf[warp];

    // Q tile first: stage it through ks, keep each warp's 16 x 64 slice as 4 matrix_a fragments.
    load_tile(ks, q + head + (long long)q0 * HEAD_DIM, FLASH_BM, n_ctx - q0);
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> qa[HEAD_DIM / 16];
#pragma unroll
    for (int d = 0; d < HEAD_DIM / 16; ++d) wmma::load_matrix_sync(qa[d], ks + warp * 16 * HEAD_DIM + d * 16, HEAD_DIM);

    // Each lane owns one query row (lane / 2) and half of its 64 columns (of S, P and O).
    const int row = lane / 2, col0 = (lane % 2) * 32;
    float m = -INFINITY, l = 0.0f, acc[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) acc[i] = 0.0f;

    for (int kv0 = 0; kv0 < n_ctx; kv0 += FLASH_BN) {
        __syncthreads();  // every warp is done with the previous tile (and with the Q staging)
        load_tile(ks, k + head + (long long)kv0 * HEAD_DIM, FLASH_BN, n_ctx - kv0);
        load_tile(vs, v + head + (long long)kv0 * HEAD_DIM, FLASH_BN, n_ctx - kv0);
        __syncthreads();

        // S (16 x 64) = Q_w (16 x 64) K^T: K rows read as a column-major matrix_b (element (d, key) at key*64 + d).
#pragma unroll
        for (int j = 0; j < FLASH_BN / 16; ++j) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> sc;
            wmma::fill_fragment(sc, 0.0f);
#pragma unroll
            for (int d = 0; d < HEAD_DIM / 16; ++d) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kb;
                wmma::load_matrix_sync(kb, ks + j * 16 * HEAD_DIM + d * 16, HEAD_DIM);
                wmma::mma_sync(sc, qa[d], kb, sc);
            }
            wmma::store_matrix_sync(s_w + j * 16, sc, FLASH_BN, wmma::mem_row_major);
        }
        __syncwarp();

        // Online softmax on this lane's 32 scores; the row's other half is on lane ^ 1.
        float s[32], tile_max = -INFINITY;
#pragma unroll
        for (int i = 0; i < 32; ++i) {
            s[i] = (kv0 + col0 + i < n_ctx) ? s_w[row * FLASH_BN + col0 + i] * scale : -INFINITY;
            tile_max = fmaxf(tile_max, s[i]);
        }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        const float m_new = fmaxf(m, tile_max);  // finite: key kv0 < n_ctx is in this tile
        const float alpha = __expf(m - m_new);  // 0 on the first tile (m = -inf)
        float tile_sum = 0.0f;
#pragma unroll
        for (int i = 0; i < 32; ++i) {
            const float p = __expf(s[i] - m_new);
            tile_sum += p;
            p_w[row * FLASH_BN + col0 + i] = __float2half(p);
            acc[i] *= alpha;
        }
        tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
        l = l * alpha + tile_sum;
        m = m_new;
        __syncwarp();

        // PV (16 x 64) = P (16 x 64 keys) V (64 keys x 64), into s_w, then added to this lane's O.
#pragma unroll
        for (int j = 0; j < HEAD_DIM / 16; ++j) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> pv;
            wmma::fill_fragment(pv, 0.0f);
#pragma unroll
            for (int kk = 0; kk < FLASH_BN / 16; ++kk) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vb;
                wmma::load_matrix_sync(pa, p_w + kk * 16, FLASH_BN);
                wmma::load_matrix_sync(vb, vs + kk * 16 * HEAD_DIM + j * 16, HEAD_DIM);
                wmma::mma_sync(pv, pa, vb, pv);
            }
            wmma::store_matrix_sync(s_w + j * 16, pv, HEAD_DIM, wmma::mem_row_major);
        }
        __syncwarp();
#pragma unroll
        for (int i = 0; i < 32; ++i) acc[i] += s_w[row * HEAD_DIM + col0 + i];
    }

    // O last.
    const int qrow = q0 + warp * 16 + row;
    if (qrow < n_ctx) {
        __half* out = o + head + (long long)qrow * HEAD_DIM + col0;
        const float inv = 1.0f / l;
#pragma unroll
        for (int i = 0; i < 32; i += 2) {
            reinterpret_cast<__half2*>(out)[i / 2] = __floats2half2_rn(acc[i] * inv, acc[i + 1] * inv);
        }
    }
}

// ------------------------------------------------------------------------------------- fmha_fwd_kernel

#define FMHA_BM 32   // query rows per block
#define FMHA_BN 128  // K/V rows per tile

extern "C" __global__ void __launch_bounds__(128)
fmha_fwd_kernel(const __half* q, const __half* k, const __half* v, __half* o, int n_ctx, float scale) {
    __shared__ float qs[FMHA_BM * HEAD_DIM];                     // Q tile in fp32, pre-scaled
    __shared__ __align__(16) __half ks[FMHA_BN * HEAD_DIM];      // K tile, then P (32 x 128 fp32)
    __shared__ __align__(16) __half vs[FMHA_BN * HEAD_DIM];

    const long long head = (long long)blockIdx.y * n_ctx * HEAD_DIM;
    const int q0 = blockIdx.x * FMHA_BM;
    // Thread t: query row t / 4 of the tile; part t % 4 owns output columns part*16 .. part*16+15 and
    // scores of keys part, part+4, ...; the 4 threads of a row are adjacent lanes of one warp.
    const int row = threadIdx.x / 4, part = threadIdx.x % 4;

    // Q tile first.
    for (int i = threadIdx.x; i < FMHA_BM * HEAD_DIM; i += blockDim.x) {
        const int r = i / HEAD_DIM;
        qs[i] = (q0 + r < n_ctx) ? __half2float(q[head + (long long)q0 * HEAD_DIM + i]) * scale : 0.0f;
    }

    float m = -INFINITY, l = 0.0f, acc[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) acc[i] = 0.0f;

    for (int kv0 = 0; kv0 < n_ctx; kv0 += FMHA_BN) {
        __syncthreads();  // Q is staged / the previous tile is consumed
        load_tile(ks, k + head + (long long)kv0 * HEAD_DIM, FMHA_BN, n_ctx - kv0);
        load_tile(vs, v + head + (long long)kv0 * HEAD_DIM, FMHA_BN, n_ctx - kv0);
        __syncthreads();

        // Scores of keys part + 4*i (i < 32), full 64-wide dot products.
        float s[FMHA_BN / 4], tile_max = -INFINITY;
#pragma unroll
        for (int i = 0; i < FMHA_BN / 4; ++i) {
            const int key = part + 4 * i;
            float dot = 0.0f;
#pragma unroll 8
            for (int d = 0; d < HEAD_DIM; ++d) dot = fmaf(qs[row * HEAD_DIM + d], __half2float(ks[key * HEAD_DIM + d]), dot);
            s[i] = (kv0 + key < n_ctx) ? dot : -INFINITY;
            tile_max = fmaxf(tile_max, s[i]);
        }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
        const float m_new = fmaxf(m, tile_max);
        const float alpha = __expf(m - m_new);
        float tile_sum = 0.0f;
#pragma unroll
        for (int i = 0; i < FMHA_BN / 4; ++i) {
            s[i] = __expf(s[i] - m_new);
            tile_sum += s[i];
        }
        tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
        tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 2);
        l = l * alpha + tile_sum;
        m = m_new;
#pragma unroll
        for (int d = 0; d < 16; ++d) acc[d] *= alpha;

        // P replaces K in shared memory (128 x 64 halves = 32 x 128 floats), so the PV loop below
        // indexes keys at run time instead of unrolling over this thread's registers.
        __syncthreads();  // every thread has read K
        float* ps = reinterpret_cast<float*>(ks);
#pragma unroll
        for (int i = 0; i < FMHA_BN / 4; ++i) ps[row * FMHA_BN + part + 4 * i] = s[i];
        __syncthreads();

        // O += P V on this thread's 16 columns.
        for (int key = 0; key < FMHA_BN; ++key) {
            const float p = ps[row * FMHA_BN + key];
            const __half* vrow = vs + key * HEAD_DIM + part * 16;
#pragma unroll
            for (int d = 0; d < 16; ++d) acc[d] = fmaf(p, __half2float(vrow[d]), acc[d]);
        }
    }

    // O last.
    if (q0 + row < n_ctx) {
        __half* out = o + head + (long long)(q0 + row) * HEAD_DIM + part * 16;
        const float inv = 1.0f / l;
#pragma unroll
        for (int d = 0; d < 16; d += 2) {
            reinterpret_cast<__half2*>(out)[d / 2] = __floats2half2_rn(acc[d] * inv, acc[d + 1] * inv);
        }
    }
}
