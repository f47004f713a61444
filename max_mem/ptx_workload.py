"""Fig. 11 on any current GPU: one sub-module per model, built from PTX kernels, its peak memory printed.

    python max_mem/ptx_workload.py <model>        # e.g. llama8b-bs32, resnet-bs32

The ``ptx`` family's counterpart of ``collect.py --run``: the paper profiled torch.compile'd
sub-modules; PyTorch 2.11 ships no PTX, so each sub-module here is made of the suite's CUDA C kernels
(``neutrino_ae/workloads/cuda/layers.cu``: wmma GEMM and implicit-GEMM convolution, RMSNorm, SiLU x
up, add, inference batch-norm + ReLU) and its Triton FlashAttention-2 (sm_80 PTX), at the model's
real sizes:

* ``llama{1b,3b,8b}-bs{N}``: one decoder layer (RMSNorm, QKV, attention, O, RMSNorm, SwiGLU MLP),
  sequence 128, with the model's hidden and MLP sizes; heads of 64 (the compiled attention's head
  dim; Llama 3B/8B use 128) and non-causal;
* ``resnet-bs32``: a bottleneck block (1x1, 3x3, 1x1 convolutions, batch-norm + ReLU, residual) on
  32 x 56 x 56 x 256;
* ``sd-bs1``: a UNet stand-in at 64 x 64 x 320 (two 3x3 convolutions, norm + ReLU, residual,
  self-attention over the 4096 positions), not Stable Diffusion's own blocks;
* ``mamba-bs32``: a Mamba-130M-sized stand-in (in-projection, SiLU gate, out-projection, residual);
  the selective scan itself is not modelled.

Tensors are zero-filled by the driver (the values do not change what ``--memusage`` measures). The
last line is ``max memory: <bytes>``: the most bytes this process held allocated at once, what
``torch.cuda.max_memory_allocated()`` printed in the paper's scripts.
"""

from __future__ import annotations

import argparse
import re
import sys

from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.cudadrv import Buffer, Driver
from neutrino_ae.workloads.ptx_attention import launch_triton
from neutrino_ae.workloads.ptx_kernels import Kernels
from neutrino_ae.workloads.ptx_layers import LAYERS_CU, add, bn_relu, conv2d, gemm, rms_norm, silu_mul

SOURCES = (LAYERS_CU,)
MODELS = ("resnet-bs32", "sd-bs1", "mamba-bs32", "llama1b-bs32", "llama3b-bs32", "llama8b-bs32",
          "llama8b-bs128", "llama8b-bs256")
LLAMA = {"1b": (2048, 8192), "3b": (3072, 8192), "8b": (4096, 14336)}  # hidden, MLP
SEQ, HEAD_DIM = 128, 64
ATTN = "attn_fwd_m128"


class Model:
    def __init__(self, drv: Driver) -> None:
        self.drv, self.ks = drv, Kernels(drv)

    def zeros(self, *shape: int, dtype: str = "float16") -> Buffer:
        buf = self.drv.empty(shape, dtype)
        self.drv.memset_d32(buf, 0, buf.nbytes // 4)
        return buf

    def attention(self, qkv: Buffer, out: Buffer, batch: int, seq: int, hidden: int) -> None:
        """Self-attention on a (batch*seq, 3, heads, 64) projection, into (batch*seq, heads, 64)."""
        heads = hidden // HEAD_DIM
        row = 3 * hidden  # elements between two tokens of q (or k, v)
        qkv_strides = [seq * row, HEAD_DIM, row, 1]
        # q, k, v are the same buffer at offsets 0, hidden, 2*hidden elements (2 bytes each)
        q, k, v = (Buffer(qkv.ptr + 2 * hidden * i, qkv.nbytes - 2 * hidden * i) for i in range(3))
        launch_triton(self.drv, self.ks, ATTN, (q, k, v, out), (batch, heads, seq, HEAD_DIM), HEAD_DIM ** -0.5,
                      strides={"q": qkv_strides, "k": qkv_strides, "v": qkv_strides,
                               "o": [seq * hidden, HEAD_DIM, hidden, 1]})

    def llama(self, size: str, batch: int) -> None:
        hidden, mlp = LLAMA[size]
        t = batch * SEQ
        w = {"norm": self.zeros(hidden), "qkv": self.zeros(hidden, 3 * hidden), "o": self.zeros(hidden, hidden),
             "gate": self.zeros(hidden, mlp), "up": self.zeros(hidden, mlp), "down": self.zeros(mlp, hidden)}
        x, h = self.zeros(t, hidden), self.zeros(t, hidden)
        rms_norm(self.drv, self.ks, x, w["norm"], h, t, hidden)
        qkv = self.zeros(t, 3 * hidden)
        gemm(self.drv, self.ks, h, w["qkv"], qkv, t, 3 * hidden, hidden)
        a = self.zeros(t, hidden)
        self.attention(qkv, a, batch, SEQ, hidden)
        self.drv.free(qkv)
        gemm(self.drv, self.ks, a, w["o"], h, t, hidden, hidden)
        add(self.drv, self.ks, x, h, x, t * hidden)
        rms_norm(self.drv, self.ks, x, w["norm"], h, t, hidden)
        gate, up = self.zeros(t, mlp), self.zeros(t, mlp)
        gemm(self.drv, self.ks, h, w["gate"], gate, t, mlp, hidden)
        gemm(self.drv, self.ks, h, w["up"], up, t, mlp, hidden)
        silu_mul(self.drv, self.ks, gate, up, gate, t * mlp)
        gemm(self.drv, self.ks, gate, w["down"], h, t, hidden, mlp)
        add(self.drv, self.ks, x, h, x, t * hidden)

    def norm_relu(self, x: Buffer, n: int, c: int, relu: bool = True) -> None:
        scale, shift = self.zeros(c, dtype="float32"), self.zeros(c, dtype="float32")
        bn_relu(self.drv, self.ks, x, scale, shift, x, n, c, relu)

    def resnet(self, batch: int) -> None:
        n, hw, c, mid = batch, 56, 256, 64
        x = self.zeros(n, hw, hw, c)
        h1, h2, y = self.zeros(n, hw, hw, mid), self.zeros(n, hw, hw, mid), self.zeros(n, hw, hw, c)
        conv2d(self.drv, self.ks, x, self.zeros(mid, 1, 1, c), (n, hw, hw, c), mid, 1, 0, h1)
        self.norm_relu(h1, n * hw * hw * mid, mid)
        conv2d(self.drv, self.ks, h1, self.zeros(mid, 3, 3, mid), (n, hw, hw, mid), mid, 3, 1, h2)
        self.norm_relu(h2, n * hw * hw * mid, mid)
        conv2d(self.drv, self.ks, h2, self.zeros(c, 1, 1, mid), (n, hw, hw, mid), c, 1, 0, y)
        self.norm_relu(y, n * hw * hw * c, c, relu=False)
        add(self.drv, self.ks, x, y, y, n * hw * hw * c)
        self.norm_relu(y, n * hw * hw * c, c)

    def sd(self, batch: int) -> None:
        n, hw, c = batch, 64, 320
        x, h, y = self.zeros(n, hw, hw, c), self.zeros(n, hw, hw, c), self.zeros(n, hw, hw, c)
        conv2d(self.drv, self.ks, x, self.zeros(c, 3, 3, c), (n, hw, hw, c), c, 3, 1, h)
        self.norm_relu(h, n * hw * hw * c, c)
        conv2d(self.drv, self.ks, h, self.zeros(c, 3, 3, c), (n, hw, hw, c), c, 3, 1, y)
        add(self.drv, self.ks, x, y, x, n * hw * hw * c)
        t = n * hw * hw
        qkv, a = self.zeros(t, 3 * c), self.zeros(t, c)
        gemm(self.drv, self.ks, x, self.zeros(c, 3 * c), qkv, t, 3 * c, c)
        self.attention(qkv, a, n, hw * hw, c)
        gemm(self.drv, self.ks, a, self.zeros(c, c), y, t, c, c)
        add(self.drv, self.ks, x, y, x, t * c)

    def mamba(self, batch: int) -> None:
        hidden, inner = 768, 1536
        t = batch * SEQ
        x, gate, up, h = (self.zeros(t, hidden), self.zeros(t, inner), self.zeros(t, inner), self.zeros(t, hidden))
        gemm(self.drv, self.ks, x, self.zeros(hidden, inner), gate, t, inner, hidden)
        gemm(self.drv, self.ks, x, self.zeros(hidden, inner), up, t, inner, hidden)
        silu_mul(self.drv, self.ks, gate, up, gate, t * inner)
        gemm(self.drv, self.ks, gate, self.zeros(inner, hidden), h, t, hidden, inner)
        add(self.drv, self.ks, x, h, x, t * hidden)

    def run(self, model: str) -> None:
        batch = int(model.rsplit("-bs", 1)[1])
        m = re.fullmatch(r"llama(\d+b)-bs\d+", model)
        if m:
            self.llama(m.group(1), batch)
        else:
            getattr(self, model.split("-", 1)[0])(batch)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=MODELS)
    args = ap.parse_args(argv)
    drv = Driver()
    Model(drv).run(args.model)
    drv.synchronize()
    print(f"{args.model}: PTX stand-in sub-module (max_mem/ptx_workload.py)")
    print(f"max memory: {drv.max_memory_allocated}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
