"""Fig. 11 workloads: torch.compile'd sub-modules of eight models as lists of kernel launches.

Each op becomes the launch Inductor/Triton would emit (the launch sizes decide probe memory):

* ``mm(M, N, K)``: Triton matmul, 128x128x32 tiles, 256 threads; global accesses per thread =
  ``ceil(K/32) * 4`` tile loads + 8 stores (16-byte vectors).
* ``pw(numel, inputs)``: pointwise, XBLOCK 1024, 128 threads, 8 halves (16 B) per access: ``inputs + 1``.
* ``red(rows, cols)``: one 256-thread block per row, two passes: ``2 * ceil(cols / 2048) + 1``.
* ``conv``: implicit GEMM, ``mm(n*ho*wo, k, c*r*r)``; ``attn(b, h, s, d)``: FlashAttention tiles
  128x64, 128 threads; ``embed(tokens, dim)``: one block per token; ``scan``: Mamba's selective
  scan, one 128-thread block per (batch, 128 channels), 4 accesses per step.

Workload peak memory (``max memory:`` in stdout.log) = weights + input + the two largest op outputs
(fp16), i.e. what torch.cuda.max_memory_allocated sees for one compiled sub-module run.

Probe memory of a launch = its units (threads, or warps) x bytes per unit (dmat: 16 B per global
access of a thread). A buffer must fit in what the workload leaves free on the device
(:data:`DEVICE_MEMORY_BYTES` - the sub-module's peak): a larger one cannot be allocated. The dmat
buffer of a launch with more accesses than that is sized to what fits -- each thread records its
first ``free / units / 16`` accesses -- so probe memory + workload peak never exceed the GPU's memory
(the uncapped dmat buffer of llama8b-bs256's lm_head would be 509 GiB on a 40 GB A100).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

F16 = 2
#: The modelled GPU's memory (neutrino_ae/sample/device.py: an A100-SXM4-40GB, 40 GiB as the driver
#: reports it): probe buffers and the workload share it.
DEVICE_MEMORY_BYTES = 40 * 2**30


@dataclass(frozen=True)
class Launch:
    name: str
    grid: int
    threads: int
    accesses: int  # global accesses per thread (dmat records)
    out_bytes: int
    free_bytes: int | None = None  # device memory the sub-module's workload leaves free (set by SubModule)


def mm(m: int, n: int, k: int) -> Launch:
    return Launch("triton_tem_fused_mm_0", math.ceil(m / 128) * math.ceil(n / 128), 256,
                  math.ceil(k / 32) * 4 + 8, m * n * F16)


def pw(numel: int, inputs: int = 1) -> Launch:
    return Launch("triton_poi_fused_0", math.ceil(numel / 1024), 128, inputs + 1, numel * F16)


def red(rows: int, cols: int) -> Launch:
    return Launch("triton_red_fused_0", rows, 256, 2 * math.ceil(cols / 2048) + 1, rows * cols * F16)


def conv(n: int, c: int, hw: int, k: int, r: int, stride: int = 1) -> Launch:
    ho = hw // stride
    launch = mm(n * ho * ho, k, c * r * r)
    return Launch("triton_tem_fused_convolution_0", launch.grid, launch.threads, launch.accesses, launch.out_bytes)


def attn(b: int, h: int, s: int, d: int) -> Launch:
    per_q = max(1, 128 * d * F16 // (128 * 16))
    per_kv = max(1, 64 * d * F16 // (128 * 16))
    return Launch("triton_tem_fused_flash_attention_0", math.ceil(s / 128) * b * h, 128,
                  2 * per_q + 2 * per_kv * math.ceil(s / 64) + 1, b * h * s * d * F16)


def embed(tokens: int, dim: int) -> Launch:
    return Launch("triton_poi_fused_embedding_0", tokens, 128, math.ceil(dim * F16 / 16 / 128) * 2 + 1,
                  tokens * dim * F16)


def scan(b: int, d_inner: int, seq: int) -> Launch:
    return Launch("selective_scan_fwd_kernel", b * math.ceil(d_inner / 128), 128, 4 * seq, b * d_inner * seq * F16)


@dataclass(frozen=True)
class SubModule:
    name: str
    weights: int  # parameter count
    input_bytes: int
    launches: tuple[Launch, ...]

    def __post_init__(self) -> None:
        free = DEVICE_MEMORY_BYTES - self.peak_bytes()
        if free <= 0:
            raise ValueError(f"{self.name}: a peak of {self.peak_bytes()} bytes does not fit the device's memory")
        object.__setattr__(self, "launches", tuple(replace(x, free_bytes=free) for x in self.launches))

    def peak_bytes(self) -> int:
        outs = sorted((launch.out_bytes for launch in self.launches), reverse=True)[:2]
        total = self.weights * F16 + self.input_bytes + sum(outs)
        return int(math.ceil(total / (2 << 20)) * (2 << 20))


def _llama(h: int, inter: int, heads: int, kv: int, bs: int, seq: int = 128, vocab: int = 128256
           ) -> list[SubModule]:
    t = bs * seq
    hd = h // heads
    qkv = h + 2 * kv * hd
    x = t * h * F16
    return [
        SubModule("embed", vocab * h, t * 8, (embed(t, h),)),
        SubModule("attn", h * qkv + h * h + h, x, (red(t, h), mm(t, qkv, h), pw(t * qkv, 2),
                                                  attn(bs, heads, seq, hd), mm(t, h, h), pw(t * h, 2))),
        SubModule("mlp", 3 * h * inter + h, x, (red(t, h), mm(t, 2 * inter, h), pw(t * inter, 2), mm(t, h, inter),
                                                pw(t * h, 2))),
        SubModule("lm_head", vocab * h + h, x, (red(t, h), mm(t, vocab, h))),
    ]


def _resnet(bs: int) -> list[SubModule]:
    def stage(name: str, hw: int, c: int, stride: int) -> SubModule:
        cin = c * 4 // (2 if stride == 2 else 1) if c > 64 else 256
        w = cin * c + 9 * c * c + c * 4 * c
        return SubModule(name, w, bs * cin * (hw * stride) ** 2 * F16,
                         (conv(bs, cin, hw * stride, c, 1, stride), pw(bs * c * hw * hw, 3), conv(bs, c, hw, c, 3),
                          pw(bs * c * hw * hw, 3), conv(bs, c, hw, 4 * c, 1), pw(bs * 4 * c * hw * hw, 4)))
    return [
        SubModule("stem", 3 * 64 * 49, bs * 3 * 224 * 224 * F16,
                  (conv(bs, 3, 224, 64, 7, 2), pw(bs * 64 * 112 * 112, 3), pw(bs * 64 * 56 * 56, 1))),
        stage("layer1", 56, 64, 1), stage("layer2", 28, 128, 2), stage("layer3", 14, 256, 2),
        stage("layer4", 7, 512, 2),
        SubModule("head", 2048 * 1000, bs * 2048 * 49 * F16, (red(bs * 2048, 49), mm(bs, 1000, 2048))),
    ]


def _sd(bs: int) -> list[SubModule]:
    t = bs * 77
    return [
        SubModule("text_encoder", 123_000_000, t * 8, (embed(t, 768), red(t, 768), mm(t, 3 * 768, 768),
                                                        attn(bs, 12, 77, 64), mm(t, 768, 768), mm(t, 3072, 768),
                                                        mm(t, 768, 3072))),
        SubModule("unet", 860_000_000, bs * 4 * 64 * 64 * F16,
                  (conv(bs, 4, 64, 320, 3), pw(bs * 320 * 4096, 3), conv(bs, 320, 64, 320, 3),
                   mm(bs * 4096, 3 * 320, 320), attn(bs, 8, 4096, 40), mm(bs * 4096, 320, 320),
                   conv(bs, 640, 32, 640, 3), conv(bs, 1280, 16, 1280, 3), conv(bs, 1280, 8, 1280, 3))),
        SubModule("vae_decoder", 49_000_000, bs * 4 * 64 * 64 * F16,
                  (conv(bs, 4, 64, 512, 3), conv(bs, 512, 64, 512, 3), conv(bs, 512, 128, 512, 3),
                   conv(bs, 256, 256, 256, 3), conv(bs, 128, 512, 128, 3), pw(bs * 128 * 512 * 512, 2),
                   conv(bs, 128, 512, 3, 3))),
    ]


def _mamba(bs: int, seq: int = 1024, d: int = 1024, vocab: int = 50280) -> list[SubModule]:
    t, di = bs * seq, 2 * d
    return [
        SubModule("embed", vocab * d, t * 8, (embed(t, d),)),
        SubModule("mixer", d * 2 * di + di * 4 + di * 96 + 64 * di + di * d, t * d * F16,
                  (red(t, d), mm(t, 2 * di, d), pw(t * di, 2), mm(t, 96, di), mm(t, di, 64), scan(bs, di, seq),
                   pw(t * di, 3), mm(t, d, di))),
        SubModule("lm_head", vocab * d, t * d * F16, (red(t, d), mm(t, vocab, d))),
    ]


def models() -> dict[str, list[SubModule]]:
    return {
        "resnet-bs32": _resnet(32),
        "sd-bs1": _sd(1),
        "mamba-bs32": _mamba(32),
        "llama1b-bs32": _llama(2048, 8192, 32, 8, 32),
        "llama3b-bs32": _llama(3072, 8192, 24, 8, 32),
        "llama8b-bs32": _llama(4096, 14336, 32, 8, 32),
        "llama8b-bs128": _llama(4096, 14336, 32, 8, 128),
        "llama8b-bs256": _llama(4096, 14336, 32, 8, 256),
    }


PROBE_DATAMODEL = {"block_sched": ("warp", 16), "gmem_bytes": ("thread", 8), "tensorop_count": ("thread", 8),
                   "dmat": ("thread", 16)}


def probe_units(launch: Launch, probe: str) -> int:
    """Threads or warps of the launch, as ``probe`` saves them."""
    level = PROBE_DATAMODEL[probe][0]
    return launch.grid * (math.ceil(launch.threads / 32) if level == "warp" else launch.threads)


def probe_mem(launch: Launch, probe: str) -> tuple[int, int]:
    """(bytes per unit, probe memory of the launch) for ``probe``: the records the probe saves, at most
    what fits in the device memory the workload leaves free (``launch.free_bytes``), in whole records."""
    nbytes = PROBE_DATAMODEL[probe][1]
    units = probe_units(launch, probe)
    per_unit = nbytes * (launch.accesses if probe == "dmat" else 1)
    if launch.free_bytes is not None and units * per_unit > launch.free_bytes:
        per_unit = launch.free_bytes // units // nbytes * nbytes
    return per_unit, units * per_unit
