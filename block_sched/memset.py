"""Sec. 4.5 optimisation 1: zero the tensor with the CUDA driver's ``cuMemsetD16`` instead of a kernel.

Calls ``libcuda`` directly through ctypes (no extra Python package), on the pointer of a PyTorch
tensor, ``--repeat`` times (driver-side timings vary, so the paper timed many calls).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import sys

# Run as a script (also under `neutrino ... python <this file>`): make the repo root importable.
from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.gpu import cuda_torch


class CudaDriverError(RuntimeError):
    pass


def load_libcuda() -> ctypes.CDLL:
    for name in ("libcuda.so.1", ctypes.util.find_library("cuda") or "libcuda.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise CudaDriverError("cannot load libcuda.so.1 (is the NVIDIA driver installed?)")


def check(lib: ctypes.CDLL, rc: int, what: str) -> None:
    """Raise with the driver's error name when a CUresult is not CUDA_SUCCESS (0)."""
    if rc == 0:
        return
    name = ctypes.c_char_p()
    lib.cuGetErrorName(ctypes.c_int(rc), ctypes.byref(name))
    label = name.value.decode() if name.value else "unknown"
    raise CudaDriverError(f"{what} failed: CUresult {rc} ({label})")


def memset_d16(lib: ctypes.CDLL, dptr: int, value: int, count: int) -> None:
    # The _v2 entry point takes a 64-bit CUdeviceptr; cuda.h maps cuMemsetD16 to it.
    fn = lib.cuMemsetD16_v2
    fn.argtypes = [ctypes.c_uint64, ctypes.c_ushort, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    check(lib, fn(dptr, value, count), "cuMemsetD16")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=100, help="number of allocate+memset rounds (default 100)")
    ap.add_argument("--check", action="store_true", help="pre-fill with ones and verify the memset zeroed it")
    args = ap.parse_args(argv)
    torch = cuda_torch(needed_by="memset.py")
    try:
        lib = load_libcuda()
        check(lib, lib.cuInit(0), "cuInit")
        n = args.rows * args.cols
        for _ in range(args.repeat):
            # torch.empty makes the primary context current, which the driver call then uses.
            a = torch.empty((args.rows, args.cols), dtype=torch.float16, device="cuda")
            if args.check:
                a.fill_(1.0)
                torch.cuda.synchronize()
            memset_d16(lib, a.data_ptr(), 0, n)
        torch.cuda.synchronize()
    except CudaDriverError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.check:
        ok = bool((a == 0).all().item())
        print(f"memset: {args.rows}x{args.cols} fp16 zeros after {args.repeat} rounds: {'ok' if ok else 'WRONG'}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
