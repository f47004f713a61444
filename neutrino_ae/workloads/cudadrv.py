"""The CUDA driver API through ctypes: what the suite's PTX workloads need, and nothing of PyTorch.

Neutrino probes PTX only, and on today's stacks neither PyTorch (SASS-only wheels) nor Triton >= 3.3
(it launches with ``cuLaunchKernelEx``, which Neutrino's hook driver does not export) gives it a
kernel it can probe. A PTX workload loads its kernels with ``cuModuleLoadData`` and launches them with
``cuLaunchKernel``: the path the hook driver intercepts, probes and times on any current GPU, and the
one the emulated driver (``tools/real_neutrino/emucuda.c``) runs on a machine without a GPU.

``libcuda.so.1`` is opened by name, so under ``neutrino`` the hook driver answers. :class:`Driver`
also counts the bytes this process allocated (``max_memory_allocated``, what the paper's workloads
printed from ``torch.cuda.max_memory_allocated()`` for Fig. 11) and names tensors in the trace
folder's ``tensor.trace`` for DMAT (what Neutrino's ``TensorTrace`` writes for PyTorch tensors).
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neutrino_ae.errors import NeutrinoAEError

from .ptx_build import ptx_entries

#: cuDeviceGetAttribute ids (cuda.h's CUdevice_attribute)
ATTR_SM_COUNT = 16
#: cuFuncSetAttribute: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (kernels asking > 48 KiB)
FUNC_MAX_DYNAMIC_SHARED = 8
STATIC_SHARED_LIMIT = 48 * 1024

#: PTX parameter type -> ctypes type of the value cuLaunchKernel is handed a pointer to
_CTYPES: dict[str, type] = {
    "u64": ctypes.c_uint64, "s64": ctypes.c_int64, "b64": ctypes.c_uint64,
    "u32": ctypes.c_uint32, "s32": ctypes.c_int32, "b32": ctypes.c_uint32,
    "f32": ctypes.c_float, "f64": ctypes.c_double,
    "u16": ctypes.c_uint16, "s16": ctypes.c_int16, "b16": ctypes.c_uint16,
    "u8": ctypes.c_uint8, "s8": ctypes.c_int8, "b8": ctypes.c_uint8,
}


class CudaError(NeutrinoAEError):
    """A driver call failed; one line naming the call and the driver's error name."""

    exit_code = 3


@dataclass(frozen=True)
class Kernel:
    name: str
    handle: ctypes.c_void_p
    params: tuple[str, ...]  # PTX types, in order

    def pack(self, args: Sequence[int | float | None]) -> tuple[ctypes.Array, list]:
        if len(args) != len(self.params):
            raise CudaError(f"{self.name}: {len(args)} argument(s) given, the PTX declares {len(self.params)} "
                            f"({', '.join(self.params)})")
        values = [_CTYPES[t](0 if a is None else a) for t, a in zip(self.params, args, strict=True)]
        ptrs = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        return ptrs, values  # the values must outlive the launch call


@dataclass(frozen=True)
class Buffer:
    """Device memory: its address (what a kernel parameter takes) and size."""

    ptr: int
    nbytes: int
    name: str = ""


class Driver:
    """One context on device 0, its modules, allocations and launches."""

    def __init__(self, lib: str = "libcuda.so.1") -> None:
        try:
            self.cu = ctypes.CDLL(lib)
        except OSError as exc:
            raise CudaError(f"{lib}: cannot load the CUDA driver ({exc}); is the NVIDIA driver installed?") from None
        self._setup_prototypes()
        self.check(self.cu.cuInit(0), "cuInit")
        self.device = ctypes.c_int()
        self.check(self.cu.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self.check(self.cu.cuCtxCreate_v2(ctypes.byref(self.context), 0, self.device), "cuCtxCreate_v2")
        self._modules: dict[str, ctypes.c_void_p] = {}
        self._kernels: dict[tuple[str, str], Kernel] = {}
        self.allocated = 0
        self.max_memory_allocated = 0
        self._live: dict[int, int] = {}
        self.tensors: list[dict[str, object]] = []

    def _setup_prototypes(self) -> None:
        cu = self.cu
        cu.cuLaunchKernel.argtypes = [ctypes.c_void_p, *([ctypes.c_uint] * 7), ctypes.c_void_p,
                                      ctypes.c_void_p, ctypes.c_void_p]
        cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        cu.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
        cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
        cu.cuMemsetD8_v2.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t]
        cu.cuMemsetD16_v2.argtypes = [ctypes.c_uint64, ctypes.c_ushort, ctypes.c_size_t]
        cu.cuMemsetD32_v2.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t]
        cu.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
        cu.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
        cu.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        cu.cuEventRecord.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        cu.cuEventSynchronize.argtypes = [ctypes.c_void_p]
        cu.cuEventElapsedTime.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p]

    def check(self, rc: int, what: str) -> None:
        if rc == 0:
            return
        name = ctypes.c_char_p()
        self.cu.cuGetErrorName(rc, ctypes.byref(name))
        label = name.value.decode(errors="replace") if name.value else "unknown error"
        raise CudaError(f"{what} failed: CUresult {rc} ({label})")

    # ------------------------------------------------------------------ device
    def attribute(self, attr: int) -> int:
        v = ctypes.c_int()
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(v), attr, self.device), "cuDeviceGetAttribute")
        return v.value

    @property
    def sm_count(self) -> int:
        return self.attribute(ATTR_SM_COUNT)

    def name(self) -> str:
        buf = ctypes.create_string_buffer(256)
        self.check(self.cu.cuDeviceGetName(buf, 256, self.device), "cuDeviceGetName")
        return buf.value.decode(errors="replace")

    # ------------------------------------------------------------------ modules
    def kernel(self, ptx_path: str | os.PathLike[str], name: str) -> Kernel:
        """``name`` from the PTX file, looked up once per process (each file one module, as a PyTorch or
        Triton program has; each kernel one function handle, launched as often as the workload needs)."""
        key = (str(ptx_path), name)
        if key not in self._kernels:
            text = Path(key[0]).read_text()
            entries = ptx_entries(text)
            if name not in entries:
                raise CudaError(f"{key[0]}: no kernel {name} (entries: {', '.join(entries) or 'none'})")
            if key[0] not in self._modules:
                module = ctypes.c_void_p()
                self.check(self.cu.cuModuleLoadData(ctypes.byref(module), text.encode() + b"\0"),
                           f"cuModuleLoadData({key[0]})")
                self._modules[key[0]] = module
            fn = ctypes.c_void_p()
            self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), self._modules[key[0]], name.encode()),
                       f"cuModuleGetFunction({name})")
            self._kernels[key] = Kernel(name, fn, tuple(entries[name]))
        return self._kernels[key]

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int, name: str = "") -> Buffer:
        ptr = ctypes.c_uint64()
        self.check(self.cu.cuMemAlloc_v2(ctypes.byref(ptr), max(1, int(nbytes))), f"cuMemAlloc({nbytes})")
        self._live[ptr.value] = int(nbytes)
        self.allocated += int(nbytes)
        self.max_memory_allocated = max(self.max_memory_allocated, self.allocated)
        return Buffer(ptr.value, int(nbytes), name)

    def free(self, buf: Buffer) -> None:
        self.check(self.cu.cuMemFree_v2(buf.ptr), "cuMemFree")
        self.allocated -= self._live.pop(buf.ptr, 0)

    def upload(self, array: np.ndarray, name: str = "") -> Buffer:
        array = np.ascontiguousarray(array)
        buf = self.alloc(array.nbytes, name)
        self.check(self.cu.cuMemcpyHtoD_v2(buf.ptr, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")
        if name:
            self.name_tensor(buf, array.shape, name)
        return buf

    def empty(self, shape: Sequence[int], dtype: np.dtype | type, name: str = "") -> Buffer:
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        buf = self.alloc(nbytes, name)
        if name:
            self.name_tensor(buf, tuple(shape), name)
        return buf

    def download(self, buf: Buffer, shape: Sequence[int], dtype: np.dtype | type) -> np.ndarray:
        out = np.empty(shape, dtype=dtype)
        if out.nbytes > buf.nbytes:
            raise CudaError(f"download of {out.nbytes} bytes from a {buf.nbytes}-byte buffer")
        self.check(self.cu.cuMemcpyDtoH_v2(out.ctypes.data, buf.ptr, out.nbytes), "cuMemcpyDtoH")
        return out

    def memset_d16(self, buf: Buffer, value: int, count: int) -> None:
        self.check(self.cu.cuMemsetD16_v2(buf.ptr, value, count), "cuMemsetD16")

    def memset_d32(self, buf: Buffer, value: int, count: int) -> None:
        self.check(self.cu.cuMemsetD32_v2(buf.ptr, value, count), "cuMemsetD32")

    # ------------------------------------------------------------------ launches
    def launch(self, kernel: Kernel, grid: Sequence[int], block: int | Sequence[int],
               args: Sequence[int | float | Buffer | None], shared: int = 0) -> None:
        gx, gy, gz = (list(grid) + [1, 1])[:3]
        bx, by, bz = ([block] if isinstance(block, int) else list(block)) + [1, 1]
        if shared > STATIC_SHARED_LIMIT:
            self.check(self.cu.cuFuncSetAttribute(kernel.handle, FUNC_MAX_DYNAMIC_SHARED, shared),
                       f"cuFuncSetAttribute({kernel.name}, {shared} B shared)")
        ptrs, keep = kernel.pack([a.ptr if isinstance(a, Buffer) else a for a in args])
        self.check(self.cu.cuLaunchKernel(kernel.handle, gx, gy, gz, bx, by, bz, shared, None, ptrs, None),
                   f"cuLaunchKernel({kernel.name})")
        del keep

    def synchronize(self) -> None:
        self.check(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")

    def time_ms(self, work: Callable[[], None], repeat: int = 1) -> float:
        """Mean milliseconds of ``work`` over ``repeat`` calls, timed with CUDA events on the default
        stream (what ``torch.cuda.Event(enable_timing=True)`` does)."""
        start, stop = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cu.cuEventCreate(ctypes.byref(start), 0), "cuEventCreate")
        self.check(self.cu.cuEventCreate(ctypes.byref(stop), 0), "cuEventCreate")
        self.check(self.cu.cuEventRecord(start, None), "cuEventRecord")
        for _ in range(repeat):
            work()
        self.check(self.cu.cuEventRecord(stop, None), "cuEventRecord")
        self.check(self.cu.cuEventSynchronize(stop), "cuEventSynchronize")
        ms = ctypes.c_float()
        self.check(self.cu.cuEventElapsedTime(ctypes.byref(ms), start, stop), "cuEventElapsedTime")
        return ms.value / max(1, repeat)

    # ------------------------------------------------------------------ tensor names (DMAT)
    def name_tensor(self, buf: Buffer, shape: Sequence[int], name: str) -> None:
        self.tensors.append({"kind": "call", "time_ns": time.time_ns(), "shape": tuple(int(s) for s in shape),
                             "nbytes": buf.nbytes, "data_ptr": buf.ptr, "arg_name": name, "func": "workload",
                             "file": "ptx", "line": 0})

    def write_tensor_trace(self) -> Path | None:
        """The named tensors as ``tensor.trace`` in this process's trace folder when run under ``neutrino``;
        None otherwise.

        The folder is the hook driver's: under ``$NEUTRINO_TRACEDIR``, named ``%b%d_%H%M%S_<pid>``, holding
        the ``event.log`` it is writing. Neutrino's own ``get_tracedir()`` recomputes the name from the
        process start time and can land a second off (its comment says so), in a folder the CLI never
        announces; this finds the hook's folder by its pid instead."""
        root = os.environ.get("NEUTRINO_TRACEDIR")
        if not self.tensors or not root or not Path(root).is_dir():
            return None
        mine = [d for d in Path(root).iterdir() if d.name.endswith(f"_{os.getpid()}") and (d / "event.log").is_file()]
        if not mine:
            return None
        from neutrino_ae.formats.tensortrace import write_tensor_trace

        return write_tensor_trace(max(mine, key=lambda d: d.stat().st_mtime) / "tensor.trace", self.tensors)
