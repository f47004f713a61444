// Model-layer kernels for Fig. 11 (max_mem: the layers of an LLM decoder and a ResNet block) and the
// GEMM / convolution of Fig. 12 (exposed_latency). fp16 tensors, fp32 accumulation. Compiled to PTX
// (nvcc -ptx -arch=compute_80, neutrino_ae/workloads/ptx_build.py) so Neutrino can probe them;
// cuBLAS, cuDNN and PyTorch ship SASS only.
//
// | kernel               | stands in for                                   | signature                                         | grid                         | block |
// |----------------------|-------------------------------------------------|---------------------------------------------------|------------------------------|-------|
// | gemm_fp16_kernel     | cuBLAS HGEMM (torch.mm / nn.Linear, fp16)       | (const __half* a, const __half* b, __half* c,     | (n/64, m/64)                 | 128   |
// |                      |                                                 |  int m, int n, int k)                             |                              |       |
// | conv2d_fp16_kernel   | cuDNN implicit-GEMM conv (nn.Conv2d, NHWC fp16) | (const __half* x, const __half* w, __half* y,     | (ceil(n*oh*ow/64), k/64)     | 128   |
// |                      |                                                 |  int n, int h, int wd, int c, int k, int r,       |                              |       |
// |                      |                                                 |  int s, int pad)                                  |                              |       |
// | rms_norm_fp16_kernel | RMSNorm of LLaMA-style decoders                 | (const __half* x, const __half* w, __half* y,     | rows                         | 256   |
// |                      |                                                 |  int rows, int cols, float eps)                   |                              |       |
// | silu_mul_fp16_kernel | the SwiGLU MLP's silu(gate) * up (elementwise)  | (const __half* gate, const __half* up, __half* y, | ceil(n/256)                  | 256   |
// |                      |                                                 |  long long n)                                     |                              |       |
// | add_fp16_kernel      | residual add (elementwise)                      | (const __half* a, const __half* b, __half* y,     | ceil(n/256)                  | 256   |
// |                      |                                                 |  long long n)                                     |                              |       |
// | bn_relu_fp16_kernel  | inference BatchNorm2d (+ ReLU) of a ResNet,     | (const __half* x, const float* scale,             | ceil(n/256)                  | 256   |
// |                      |  folded into a per-channel affine               |  const float* shift, __half* y, long long n,      |                              |       |
// |                      |                                                 |  int c, int relu)                                 |                              |       |
//
// gemm: C (m x n) = A (m x k) @ B (k x n), all row-major; m, n multiples of 64, k a multiple of 16.
//   One 64 x 64 C tile per block; 4 warps, each a 32 x 32 quarter as 2 x 2 wmma 16x16x16 tiles
//   (wmma.mma.sync in PTX: what the tensorop_count / tensorop probes count); A and B step through
//   shared memory 16 columns / rows at a time.
// conv2d: x NHWC (n, h, wd, c), w KRSC (k, r, s, c), y NHWC (n, oh, ow, k) with stride 1,
//   oh = h + 2*pad - r + 1, ow = wd + 2*pad - s + 1; implicit GEMM: M = n*oh*ow output pixels,
//   N = k output channels, K = r*s*c (a 16-wide K step stays inside one (ky, kx): c % 16 == 0);
//   k % 64 == 0. Same 64 x 64 block tile and warp layout as gemm.
// bn_relu: x, y NHWC flattened to n elements (channel = index % c); y = x * scale[ch] + shift[ch],
//   then max(y, 0) when relu != 0.
// rms_norm: y = x / sqrt(mean(x^2) + eps) * w, per row of cols; needs blockDim.x == 256.

#include <cuda_fp16.h>
#include <mma.h>

#define TILE 64    // block tile (M and N) of gemm and conv2d
#define KSTEP 16   // K step (one wmma k)

using namespace nvcuda;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> Acc;

// The 4 warps' 2 x 2 fragments -> fp32 tile in shared memory -> fp16 rows of `out` (row stride ld),
// rows at or past `rows_valid` skipped. All threads of the block call it.
__device__ void store_tile(Acc (&acc)[2][2], float* cs, __half* out, long long ld, int rows_valid) {
    const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(cs + (wm * 32 + i * 16) * TILE + wn * 32 + j * 16, acc[i][j], TILE,
                                    wmma::mem_row_major);
    __syncthreads();
    for (int e = threadIdx.x; e < TILE * TILE / 2; e += blockDim.x) {  // two halves per store
        const int row = (2 * e) / TILE, col = (2 * e) % TILE;
        if (row < rows_valid) {
            reinterpret_cast<__half2*>(out + row * ld + col)[0] =
                __floats2half2_rn(cs[row * TILE + col], cs[row * TILE + col + 1]);
        }
    }
}

extern "C" __global__ void __launch_bounds__(128)
gemm_fp16_kernel(const __half* a, const __half* b, __half* c, int m, int n, int k) {
    __shared__ __align__(32) __half as[TILE * KSTEP];   // A tile: 64 rows x 16, row-major
    __shared__ __align__(32) __half bs[KSTEP * TILE];   // B tile: 16 rows x 64, row-major
    __shared__ __align__(32) float cs[TILE * TILE];     // C tile for the fp32 -> fp16 epilogue
    const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
    const long long row0 = (long long)blockIdx.y * TILE, col0 = (long long)blockIdx.x * TILE;

    Acc acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    // Thread t loads 8 halves (16 bytes) of each tile: A row t/2, columns (t%2)*8; B row t/8, columns (t%8)*8.
    const int ar = threadIdx.x / 2, ac = (threadIdx.x % 2) * 8;
    const int br = threadIdx.x / 8, bc = (threadIdx.x % 8) * 8;
    for (int k0 = 0; k0 < k; k0 += KSTEP) {
        __syncthreads();  // the previous step's fragments are loaded
        reinterpret_cast<uint4*>(as)[threadIdx.x] = *reinterpret_cast<const uint4*>(a + (row0 + ar) * k + k0 + ac);
        reinterpret_cast<uint4*>(bs)[threadIdx.x] = *reinterpret_cast<const uint4*>(b + (k0 + br) * (long long)n + col0 + bc);
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], as + (wm * 32 + i * 16) * KSTEP, KSTEP);
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], bs + wn * 32 + j * 16, TILE);
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    store_tile(acc, cs, c + row0 * n + col0, n, TILE);
}

extern "C" __global__ void __launch_bounds__(128)
conv2d_fp16_kernel(const __half* x, const __half* w, __half* y, int n, int h, int wd, int c, int k, int r,
                   int s, int pad) {
    __shared__ __align__(32) __half as[TILE * KSTEP];   // im2col rows: 64 output pixels x 16 (ky, kx, ci)
    __shared__ __align__(32) __half bs[TILE * KSTEP];   // weights: 64 output channels x 16, i.e. B col-major
    __shared__ __align__(32) float cs[TILE * TILE];
    const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
    const int oh = h + 2 * pad - r + 1, ow = wd + 2 * pad - s + 1;
    const long long pixels = (long long)n * oh * ow;
    const long long p0 = (long long)blockIdx.x * TILE;
    const int k0ch = blockIdx.y * TILE;
    const int kdim = r * s * c;

    // Thread t fills 8 halves of row t/2 of each tile (columns (t%2)*8): its output pixel is fixed.
    const int tr = threadIdx.x / 2, tc = (threadIdx.x % 2) * 8;
    const long long pix = p0 + tr;
    const int ox = (int)(pix % ow), oy = (int)((pix / ow) % oh), img = (int)(pix / ((long long)oh * ow));

    Acc acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int kk = 0; kk < kdim; kk += KSTEP) {
        const int rs = kk / c, ci = kk % c + tc;  // the 16-wide step lies inside one (ky, kx)
        const int iy = oy - pad + rs / s, ix = ox - pad + rs % s;
        uint4 val = make_uint4(0, 0, 0, 0);  // zero padding, and rows past the last pixel
        if (pix < pixels && iy >= 0 && iy < h && ix >= 0 && ix < wd)
            val = *reinterpret_cast<const uint4*>(x + (((long long)img * h + iy) * wd + ix) * c + ci);
        __syncthreads();
        reinterpret_cast<uint4*>(as)[threadIdx.x] = val;
        reinterpret_cast<uint4*>(bs)[threadIdx.x] =
            *reinterpret_cast<const uint4*>(w + (long long)(k0ch + tr) * kdim + kk + tc);
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], as + (wm * 32 + i * 16) * KSTEP, KSTEP);
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], bs + (wn * 32 + j * 16) * KSTEP, KSTEP);
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    const long long rows_left = pixels - p0;
    store_tile(acc, cs, y + p0 * k + k0ch, k, rows_left < TILE ? (int)rows_left : TILE);
}

#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
rms_norm_fp16_kernel(const __half* x, const __half* w, __half* y, int rows, int cols, float eps) {
    __shared__ float warp_part[BLOCK / 32];
    const int r = blockIdx.x;
    if (r >= rows) return;  // uniform per block
    const __half* xr = x + (long long)r * cols;
    __half* yr = y + (long long)r * cols;
    float ss = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        const float v = __half2float(xr[j]);
        ss += v * v;
    }
    for (int off = 16; off > 0; off /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    if (threadIdx.x % 32 == 0) warp_part[threadIdx.x / 32] = ss;
    __syncthreads();
    float total = 0.0f;
    for (int i = 0; i < BLOCK / 32; ++i) total += warp_part[i];
    const float inv = rsqrtf(total / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = __float2half(__half2float(xr[j]) * inv * __half2float(w[j]));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
silu_mul_fp16_kernel(const __half* gate, const __half* up, __half* y, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float g = __half2float(gate[i]);
    y[i] = __float2half(g / (1.0f + expf(-g)) * __half2float(up[i]));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
add_fp16_kernel(const __half* a, const __half* b, __half* y, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = __float2half(__half2float(a[i]) + __half2float(b[i]));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
bn_relu_fp16_kernel(const __half* x, const float* scale, const float* shift, __half* y, long long n, int c,
                    int relu) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int ch = (int)(i % c);  // NHWC: the channel varies fastest
    float v = __half2float(x[i]) * scale[ch] + shift[ch];
    if (relu) v = fmaxf(v, 0.0f);
    y[i] = __float2half(v);
}
