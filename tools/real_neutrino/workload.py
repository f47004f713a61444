"""A tiny CUDA driver-API workload (ctypes only) for the real Neutrino CLI on the emulated driver.

    python workload.py <kernels.ptx> <kernel> <grid> <block> [--launches N]

It loads the PTX with cuModuleLoadData, allocates one buffer per pointer parameter and launches
``<kernel>`` ``N`` times -- what a PyTorch or Triton program does through libcuda, minus the math.
``libcuda.so.1`` is opened by name, so under ``neutrino`` the hook driver answers.
"""

from __future__ import annotations

import argparse
import ctypes
import re
import sys
from pathlib import Path


def check(rc: int, what: str) -> None:
    if rc != 0:
        raise SystemExit(f"error: {what} returned CUresult {rc}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ptx", type=Path)
    ap.add_argument("kernel")
    ap.add_argument("grid", type=int)
    ap.add_argument("block", type=int)
    ap.add_argument("--launches", type=int, default=1)
    args = ap.parse_args(argv)

    cu = ctypes.CDLL("libcuda.so.1")
    ptx = args.ptx.read_bytes() + b"\0"
    entry = re.search(rb"\.entry " + re.escape(args.kernel.encode()) + rb"\((.*?)\)", ptx, re.S)
    if not entry:
        raise SystemExit(f"error: {args.ptx}: no kernel {args.kernel}")
    kinds = re.findall(rb"\.param \.(\w+)", entry.group(1))

    check(cu.cuInit(0), "cuInit")
    dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate_v2")
    check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)), "cuModuleLoadData")
    check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, args.kernel.encode()), "cuModuleGetFunction")

    n = args.grid * args.block
    values = []
    for kind in kinds:  # u64 parameters are device pointers, 32-bit ones sizes
        if kind == b"u64":
            ptr = ctypes.c_uint64()
            check(cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(n * 16)), "cuMemAlloc_v2")
            values.append(ptr)
        else:
            values.append(ctypes.c_int32(n if not values or kind != b"u32" else 4))
    params = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
    cu.cuLaunchKernel.argtypes = [ctypes.c_void_p, *([ctypes.c_uint] * 7), ctypes.c_void_p,
                                  ctypes.c_void_p, ctypes.c_void_p]
    for _ in range(args.launches):
        check(cu.cuLaunchKernel(fn, args.grid, 1, 1, args.block, 1, 1, 0, None, params, None), "cuLaunchKernel")
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    print(f"workload: {args.launches} launch(es) of {args.kernel} <<<{args.grid}, {args.block}>>>")
    # What the paper's workloads print for Fig. 11 (torch.cuda.max_memory_allocated()).
    print(f"max memory: {n * 16 * sum(k == b'u64' for k in kinds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
