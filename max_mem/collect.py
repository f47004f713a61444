"""Fig. 11 collection: probe memory (``neutrino --memusage``) of each model's sub-modules.

Writes ``<out>/<model>/<probe>/<sub>/{stdout.log,<tracedir>/}``, the layout ``max_mem/max_mem.py``
reads. The paper profiled torch.compile'd sub-modules (so every GEMM is a Triton/ATen kernel that
Neutrino can probe, not cuBLAS). Sub-module scripts are taken from ``--compiled DIR/<model>/*.py``
(the artifact's own scripts, if you have them); without them two small built-in ones are used:

* ``resnet-bs32``: a torch.compile'd ResNet bottleneck block, batch 32, 56x56x256;
* ``llama{1b,3b,8b}-bs{32,128,256}``: one torch.compile'd Llama decoder layer (RMSNorm, attention,
  SwiGLU MLP) with that model's hidden sizes, sequence length 128.

``sd-bs1`` and ``mamba-bs32`` need the artifact's scripts (``--compiled``); they are skipped with a
message otherwise. A sub-module script must print ``max memory: <bytes>`` (the workload's peak).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.gpu import cuda_torch
from neutrino_ae.workloads.neutrino import CollectResult, script_collector

PROBES = ("block_sched", "gmem_bytes", "tensorop_count", "dmat")
MODELS = ("resnet-bs32", "sd-bs1", "mamba-bs32", "llama1b-bs32", "llama3b-bs32", "llama8b-bs32",
          "llama8b-bs128", "llama8b-bs256")
LLAMA = {"1b": (2048, 8192, 32), "3b": (3072, 8192, 24), "8b": (4096, 14336, 32)}  # hidden, mlp, heads


def _run_builtin(model: str) -> int:
    torch = cuda_torch(needed_by=f"the {model} sub-module")
    import torch.nn.functional as F
    batch = int(model.rsplit("-bs", 1)[1])
    dev, dt = "cuda", torch.float16
    m = re.fullmatch(r"llama(\d+b)-bs\d+", model)
    if m:
        hidden, inter, heads = LLAMA[m.group(1)]
        w = {n: torch.randn(s, device=dev, dtype=dt) * 0.02 for n, s in {
            "qkv": (3 * hidden, hidden), "o": (hidden, hidden), "gate": (inter, hidden),
            "up": (inter, hidden), "down": (hidden, inter)}.items()}

        def layer(x):
            h = x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype)
            q, k, v = F.linear(h, w["qkv"]).view(x.shape[0], x.shape[1], 3, heads, -1).unbind(2)
            a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            x = x + F.linear(a.transpose(1, 2).reshape(x.shape), w["o"])
            h = x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype)
            return x + F.linear(F.silu(F.linear(h, w["gate"])) * F.linear(h, w["up"]), w["down"])

        x = torch.randn((batch, 128, hidden), device=dev, dtype=dt)
    elif model == "resnet-bs32":
        convs = [torch.nn.Conv2d(256, 64, 1), torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.Conv2d(64, 256, 1)]
        bns = [torch.nn.BatchNorm2d(c) for c in (64, 64, 256)]
        block = torch.nn.ModuleList(convs + bns).to(dev, dt).eval()

        def layer(x):
            h = x
            for i in range(3):
                h = block[3 + i](block[i](h))
                h = F.relu(h) if i < 2 else h
            return F.relu(h + x)

        x = torch.randn((batch, 256, 56, 56), device=dev, dtype=dt)
    else:
        print(f"error: no built-in sub-module for {model}; pass --compiled with the artifact's scripts",
              file=sys.stderr)
        return 2
    with torch.no_grad():
        torch.compile(layer)(x)
    torch.cuda.synchronize()
    print(f"max memory: {torch.cuda.max_memory_allocated()}")
    return 0


def submodules(model: str, compiled: Path | None, python: str, family: str = "paper") -> dict[str, list[str]] | str:
    """sub-module name -> command, or the reason there is none."""
    if family == "ptx":  # every model, from the suite's PTX kernels (ptx_workload.py)
        return {"layer": [python, str(Path(__file__).resolve().with_name("ptx_workload.py")), model]}
    if compiled is not None and (compiled / model).is_dir():
        scripts = sorted((compiled / model).glob("*.py"))
        if scripts:
            return {s.stem: [python, str(s)] for s in scripts}
    if model.startswith(("llama", "resnet")):
        return {"layer": [python, str(Path(__file__).resolve()), "--run", model]}
    return f"no sub-module scripts for {model} (pass --compiled DIR holding {model}/*.py)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", metavar="MODEL", help="run the built-in sub-module of MODEL (no profiling)")
    ap.add_argument("--out", type=Path, default=Path("traces/max_mem"))
    ap.add_argument("--neutrino", default="neutrino")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--probes", default=",".join(PROBES))
    ap.add_argument("--compiled", type=Path, default=None, help="folder of <model>/<sub>.py scripts")
    ap.add_argument("--repeats", type=int, default=1, help="accepted for a uniform interface; unused")
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--family", choices=("paper", "ptx"), default="paper",
                    help="paper: torch.compile'd sub-modules; ptx: the same layers from PTX kernels (ptx_workload.py)")
    args = ap.parse_args(argv)
    if args.run:
        return _run_builtin(args.run)
    if args.family == "ptx":
        from neutrino_ae.workloads.ptx_kernels import prebuild
        from neutrino_ae.workloads.ptx_layers import LAYERS_CU

        prebuild([LAYERS_CU])  # nvcc runs here, not inside the profiled process (ptx_workload.SOURCES)

    from neutrino_ae.workloads.neutrino import CollectRuns

    runs = CollectRuns("max_mem", args.neutrino, args.timeout)
    for model in [m for m in args.models.split(",") if m]:
        subs = submodules(model, args.compiled, sys.executable, args.family)
        if isinstance(subs, str):
            print(f"skipped {model}: {subs}")
            continue
        for probe in [p for p in args.probes.split(",") if p]:
            for sub, cmd in subs.items():
                runs.run(args.out / model / Path(probe).stem / sub, ["-p", probe, "--memusage", *cmd],
                         f"{model}/{probe}/{sub}", said=_said)
    return runs.close()



def _said(res: CollectResult) -> str:
    return f"{len(res.trace_dirs)} trace dir(s), {res.seconds:.1f}s"

#: The SECTION.collect entry: this script run as a subprocess into ``<trace_root>/max_mem/``.
collect = script_collector("max_mem", __file__)


if __name__ == "__main__":
    sys.exit(run_main(main))
