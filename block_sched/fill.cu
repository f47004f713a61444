// block_sched's workload kernel: the stand-in for PyTorch's fill (torch.zeros / torch.full on fp16),
// ATen's vectorized_elementwise_kernel<4, FillFunctor<c10::Half>>: 128 threads per block, 4 elements
// per thread, so a 4096 x 4096 fp16 tensor is 32,768 blocks x 128 threads -- the grid of Sec. 4.5.
// Compiled to PTX (nvcc -ptx -arch=compute_80, neutrino_ae/workloads/ptx_build.py) so Neutrino can
// probe it; PyTorch's own kernel ships as SASS only.
//
// | kernel           | signature                                                  | grid         | block |
// |------------------|------------------------------------------------------------|--------------|-------|
// | fill_fp16_kernel | (unsigned short* out, unsigned int bits, long long n)     | ceil(n/512)  | 128   |
//
// `bits`: the fp16 bit pattern in the low 16 bits (0 for zeros, 0x3c00 for ones).

extern "C" __global__ void fill_fp16_kernel(unsigned short* out, unsigned int bits, long long n) {
    const unsigned short v = (unsigned short)(bits & 0xffffu);
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n) {
        // One 8-byte store, as ATen's vec4 path; i is a multiple of 4, so out + i is 8-byte aligned.
        *reinterpret_cast<ushort4*>(out + i) = make_ushort4(v, v, v, v);
    } else {
        for (long long j = i; j < n; ++j) out[j] = v;  // the tail of an n not divisible by 4
    }
}
