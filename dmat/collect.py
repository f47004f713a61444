"""How dynamic.ipynb collects Fig. 1 / Fig. 10a-c: each attention workload under ``neutrino -p dmat -k
<keyword>``, its raw trace kept under ``raw/<fig>/`` and sparsified into ``<fig>.dmat``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.formats.tracedir import TraceDir, no_result_reasons
from neutrino_ae.workloads.neutrino import CollectContext, CollectError, run_neutrino, staged

from . import FIGURES
from .inputs import scan_raw, write_raw

HERE = Path(__file__).resolve().parent


def sparsify_trace_dir(trace_dir: Path, dest: Path) -> Path:
    """Turn the newest dmat ``result/*.bin`` of ``trace_dir`` into a ``.dmat`` file, chunk by chunk."""
    td = TraceDir(trace_dir)
    if not td.results():
        why = "; ".join(no_result_reasons(trace_dir)) or "did the -k keyword match a kernel?"
        raise CollectError(f"{trace_dir}: no result/*.bin ({why})")
    write_raw(scan_raw(td.open_result(-1)), dest)
    return dest


def figures_from_args(args: Sequence[str]) -> list[str] | None:
    """The figures named by ``--figures fig1,fig10b`` in the notebook's ``collect_args["dmat"]``
    (each DMAT collection takes minutes), or None for all of them."""
    return _parse_args(args)[0]


def _parse_args(args: Sequence[str]) -> tuple[list[str] | None, str | None]:
    """(figures or None for all, ``--shape`` for the ptx workloads or None) from ``collect_args["dmat"]``."""
    import argparse

    ap = argparse.ArgumentParser(prog='collect_args["dmat"]', add_help=False, exit_on_error=False)
    ap.add_argument("--figures", default="")
    ap.add_argument("--shape", default=None)
    try:
        ns, rest = ap.parse_known_args(list(args))
    except argparse.ArgumentError as exc:
        raise CollectError(f'collect_args["dmat"]: {exc}') from None
    if rest:
        raise CollectError(f'collect_args["dmat"]: unknown argument(s) {" ".join(rest)} (known: --figures, --shape)')
    names = [f for f in ns.figures.split(",") if f]
    unknown = [f for f in names if f not in FIGURES]
    if unknown:
        raise CollectError(f'collect_args["dmat"]: unknown figure(s) {", ".join(unknown)} '
                           f'(known: {", ".join(FIGURES)})')
    return names or None, ns.shape


def collect(root: Path, ctx: CollectContext, figures: Sequence[str] | None = None) -> None:
    """Fill ``root/dmat/`` with ``raw/<fig>/<tracedir>`` and ``<fig>.dmat`` per figure (all of them, or
    those of ``collect_args={"dmat": ["--figures", "fig1,fig10b"]}``)."""
    named, shape = _parse_args(ctx.extra_args.get("dmat", []))
    figures = figures or named
    if ctx.workloads == "ptx":
        from neutrino_ae.workloads.ptx_kernels import prebuild

        from .ptx_workload import SOURCES

        prebuild(SOURCES)  # nvcc runs here, not inside the profiled process
    with staged(root / "dmat") as out:
        for fig in figures or list(FIGURES):
            raw = out / "raw" / fig
            raw.mkdir(parents=True)
            if ctx.workloads == "ptx":
                workload = [ctx.python, str(HERE / "ptx_workload.py"), FIGURES[fig].ptx,
                            *(["--shape", shape] if shape else [])]
            else:
                workload = [ctx.python, str(HERE / f"{fig}.py"), *(["--shape", shape] if shape else [])]
            res = run_neutrino(["-p", "dmat", "-k", FIGURES[fig].keyword, *workload],
                               None, raw, ctx.neutrino, ctx.env, ctx.timeout, log_name=fig)
            sparsify_trace_dir(res.trace_dir, out / f"{fig}.dmat")
            ctx.log(f"  {fig}: {res.trace_dir.name} -> {fig}.dmat ({res.seconds:.1f}s)")
