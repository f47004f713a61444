// Table 2's PyTorch operators (kernel_overhead): one kernel per operator, fp32 tensors (torch.randn's
// default dtype), each with the launch shape of the ATen kernel it stands in for. Compiled to PTX
// (nvcc -ptx -arch=compute_80, neutrino_ae/workloads/ptx_build.py) so Neutrino can probe them;
// PyTorch's own kernels ship as SASS only.
//
// | kernel            | stands in for (ATen)                     | signature                                              | grid                     | block |
// |-------------------|------------------------------------------|--------------------------------------------------------|--------------------------|-------|
// | layer_norm_kernel | vectorized_layer_norm_kernel (F.layer_norm, no affine) | (const float* x, float* y, int rows, int cols, float eps) | rows              | 256   |
// | softmax_kernel    | cunn_SoftMaxForward (softmax, last dim)  | (const float* x, float* y, int rows, int cols)        | rows                     | 256   |
// | reduce_sum_kernel | reduce_kernel<SumOp> (x.sum(-1))         | (const float* x, float* y, int rows, int cols)        | rows                     | 256   |
// | max_pool2d_kernel | max_pool_forward_nchw (3x3, stride 2, pad 1) | (const float* x, float* y, int n, int c, int h, int w, int oh, int ow) | ceil(n*c*oh*ow/256) | 256 |
// | embedding_kernel  | indexSelectLargeIndex (F.embedding)      | (const long long* idx, const float* weight, float* y, int n_idx, int dim) | n_idx   | 256   |
// | gather_kernel     | gather_kernel (torch.gather, dim=1)      | (const float* x, const long long* idx, float* y, int rows, int cols, int k) | ceil(rows*k/256) | 256 |
//
// Shapes: x, y of the row kernels are (rows, cols) row-major; reduce_sum writes y[rows]; max_pool2d is
// NCHW with oh = (h + 2 - 3) / 2 + 1, ow likewise; embedding's weight is (num_embeddings, dim) and
// y is (n_idx, dim); gather's idx and y are (rows, k) with y[r, j] = x[r, idx[r, j]].
// The row kernels need blockDim.x == 256 (the reduction's shared array has one slot per warp).

#define BLOCK 256

// Sum over the block (every thread gets the result). All threads of the block must call it.
__device__ float block_sum(float v) {
    __shared__ float warp_part[BLOCK / 32];
    __syncthreads();  // a previous call's readers are done with warp_part
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (threadIdx.x % 32 == 0) warp_part[threadIdx.x / 32] = v;
    __syncthreads();
    float total = 0.0f;
    for (int i = 0; i < BLOCK / 32; ++i) total += warp_part[i];
    return total;
}

// Maximum over the block (every thread gets the result). All threads of the block must call it.
__device__ float block_max(float v) {
    __shared__ float warp_part[BLOCK / 32];
    __syncthreads();
    for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    if (threadIdx.x % 32 == 0) warp_part[threadIdx.x / 32] = v;
    __syncthreads();
    float best = -INFINITY;
    for (int i = 0; i < BLOCK / 32; ++i) best = fmaxf(best, warp_part[i]);
    return best;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layer_norm_kernel(const float* x, float* y, int rows, int cols, float eps) {
    const int r = blockIdx.x;
    if (r >= rows) return;  // uniform per block: no thread of it reaches a barrier
    const float* xr = x + (long long)r * cols;
    float* yr = y + (long long)r * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    const float mean = block_sum(s) / cols;
    // Two passes (mean, then the centred sum of squares), as ATen does in fp32: no cancellation.
    float ss = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        const float d = xr[j] - mean;
        ss += d * d;
    }
    const float rstd = rsqrtf(block_sum(ss) / cols + eps);  // biased variance, as F.layer_norm
    for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = (xr[j] - mean) * rstd;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_kernel(const float* x, float* y, int rows, int cols) {
    const int r = blockIdx.x;
    if (r >= rows) return;
    const float* xr = x + (long long)r * cols;
    float* yr = y + (long long)r * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    m = block_max(m);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - m);
    const float inv = 1.0f / block_sum(s);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) * inv;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_sum_kernel(const float* x, float* y, int rows, int cols) {
    const int r = blockIdx.x;
    if (r >= rows) return;
    const float* xr = x + (long long)r * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    s = block_sum(s);
    if (threadIdx.x == 0) y[r] = s;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
max_pool2d_kernel(const float* x, float* y, int n, int c, int h, int w, int oh, int ow) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long total = (long long)n * c * oh * ow;
    if (i >= total) return;
    const int ox = (int)(i % ow), oy = (int)((i / ow) % oh);
    const long long plane = i / ((long long)oh * ow);  // n * c + channel
    const float* xp = x + plane * h * w;
    float best = -INFINITY;  // padding never wins, as in PyTorch (pad is -inf there)
    for (int dy = 0; dy < 3; ++dy) {
        const int iy = oy * 2 - 1 + dy;
        if (iy < 0 || iy >= h) continue;
        for (int dx = 0; dx < 3; ++dx) {
            const int ix = ox * 2 - 1 + dx;
            if (ix < 0 || ix >= w) continue;
            best = fmaxf(best, xp[iy * w + ix]);
        }
    }
    y[i] = best;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
embedding_kernel(const long long* idx, const float* weight, float* y, int n_idx, int dim) {
    const int i = blockIdx.x;
    if (i >= n_idx) return;
    const float* src = weight + idx[i] * dim;
    float* dst = y + (long long)i * dim;
    for (int d = threadIdx.x; d < dim; d += blockDim.x) dst[d] = src[d];
}

extern "C" __global__ void __launch_bounds__(BLOCK)
gather_kernel(const float* x, const long long* idx, float* y, int rows, int cols, int k) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)rows * k) return;
    const long long r = t / k;
    y[t] = x[r * cols + idx[t]];
}
