"""Table 2's extra-register column end to end on GENUINE probe-engine output.

The register-heavy kernels of tools/genuine/kernels.cu (``ilp_sum``: ~128 registers, ``stencil_1d``:
~32) were given to the real probe engine of both Neutrino branches (tools/genuine/probe_engine.py ->
tests/data/genuine/probe-engine/<branch>/<probe>-<kernel>/). ptxas assembles each build on its own
and gives the dmat-probed build FEWER registers than the pruned original. Table 2 must show the
signed difference ptxas gives, marked "probed build allocated fewer registers", in the table (CSV,
Markdown, text, HTML), the JSON and the figure, and the section's claims must not call it wrong.

Each kernel_overhead cell is a genuine ``--benchmark`` trace dir written by the real hook driver
(tests/data/genuine/<branch>/block_sched-benchmark: event.log with its ``[benchmark]`` line) whose
kernel folder holds the probe engine's kernel.info and process.log for that kernel x probe.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

from kernel_overhead.claims import CLAIMS
from neutrino_ae.report.claims import DIFFERS, Claim, evaluate
from neutrino_ae.report.section import driver, registry

SECTION = registry.get("kernel_overhead")
cli_main = partial(driver.main, SECTION)


def analyze(root, out):
    """The command line's analysis of one folder, figures drawn in this process."""
    return driver.analyze_paths(SECTION, [root], out)


GENUINE = Path(__file__).resolve().parents[2] / "data" / "genuine"
MARK = "probed build allocated fewer registers"
# (probed, pruned) as ptxas printed them in each genuine process.log (read off the files, not computed)
PTXAS = {
    ("artifact", "dmat", "ilp_sum"): (114, 128), ("artifact", "dmat", "stencil_1d"): (16, 31),
    ("artifact", "block_sched", "ilp_sum"): (128, 128), ("artifact", "block_sched", "stencil_1d"): (31, 31),
    ("main", "dmat", "ilp_sum"): (118, 128), ("main", "dmat", "stencil_1d"): (18, 31),
    ("main", "block_sched", "ilp_sum"): (128, 128), ("main", "block_sched", "stencil_1d"): (31, 31),
}
GROUP = {"ilp_sum": "cutlass_op", "stencil_1d": "pytorch_op"}


def _tree(root: Path, branch: str) -> Path:
    """kernel_overhead/<group>/<kernel>/<probe>/trace/{event.log, kernel/0_<sha1>/{kernel.info, process.log}}."""
    ko_root = root / "kernel_overhead"
    bench = GENUINE / branch / "block_sched-benchmark"
    for (b, probe, kernel) in PTXAS:
        if b != branch:
            continue
        cell = ko_root / GROUP[kernel] / kernel / probe
        shutil.copytree(bench, cell / "trace", ignore=shutil.ignore_patterns("kernel", "cli.*"))
        shutil.copy(bench / "cli.stdout.log", cell / "stdout.log")
        kdir = cell / "trace" / "kernel" / f"0_{hashlib.sha1(kernel.encode()).hexdigest()}"
        kdir.mkdir(parents=True)
        engine = GENUINE / "probe-engine" / branch / f"{probe}-{kernel}"
        for name in ("kernel.info", "process.log"):
            shutil.copy(engine / name, kdir / name)
    return ko_root


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_table2_shows_the_signed_register_delta_ptxas_gives(tmp_path, branch, monkeypatch):
    figures = []
    from kernel_overhead import figures as kof

    draw = kof.draw_heatmap  # the builder the figure is drawn by (kernel_overhead.table.figures)
    monkeypatch.setattr(kof, "draw_heatmap", lambda *a, **k: figures.append(draw(*a, **k)) or figures[-1])
    out = tmp_path / "out"
    res = analyze(_tree(tmp_path, branch), out)
    want = {(GROUP[k], k, p): probed - pruned for (b, p, k), (probed, pruned) in PTXAS.items() if b == branch}
    assert min(want.values()) < 0  # the genuine fixtures hold the case this test is about

    # JSON: the signed value, per kernel folder and per cell, marked when negative; nothing "impossible"
    doc = json.loads((out / "kernel_overhead.json").read_text())
    cells = {(c["group"], c["kernel"], c["probe"]): c for c in doc["cells"]}
    assert set(cells) == set(want)
    for key, extra in want.items():
        c = cells[key]
        (reg,) = c["registers"]
        probed, pruned = PTXAS[(branch, key[2], key[1])]
        assert (reg["probed"], reg["pruned"], reg["extra"], c["extra_regs"]) == (probed, pruned, extra, extra), key
        assert reg["note"] == c["registers_note"] == (MARK if extra < 0 else None), key
        assert not any("register" in p for p in c["problems"]), c["problems"]
    summary = {s["key"]: s["value"] for s in res.summary}
    for (g, k, p), extra in want.items():
        assert summary[f"{g}.{k}.{p}.extra_registers"] == extra

    # CSV and Markdown: Table 2's +regs cell holds the signed value, the row's notes say why it is negative
    dmat_ilp = want[("cutlass_op", "ilp_sum", "dmat")]
    csv = pd.read_csv(out / "kernel_overhead.csv", keep_default_na=False)
    row = csv.set_index("kernel").loc["ilp_sum"]
    assert float(row["dmat +regs"]) == dmat_ilp and float(row["block_sched +regs"]) == 0
    assert row["notes"] == f"dmat {dmat_ilp:+d}: {MARK}"
    md = (out / "kernel_overhead.md").read_text().splitlines()
    (md_row,) = [ln for ln in md if "| ilp_sum |" in ln]
    assert f"| {dmat_ilp} |" in md_row and f"dmat {dmat_ilp:+d}: {MARK}" in md_row
    long = pd.read_csv(out / "kernel_overhead_long.csv", keep_default_na=False)
    lrow = long[(long["kernel"] == "ilp_sum") & (long["probe"] == "dmat")].iloc[0]
    assert float(lrow["extra_regs"]) == dmat_ilp and lrow["registers_note"] == MARK

    # text (the notebook's Table 2), HTML and figure labels: the signed value with the mark, and its legend
    assert f"{dmat_ilp:+d}\u2020" in res.text and f"\u2020 {MARK}" in res.text
    page = (out / "kernel_overhead.html").read_text()
    assert f"{dmat_ilp:+d}&dagger;" in page and MARK in page
    (fig,) = figures
    labels = [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]
    assert any(f"{dmat_ilp:+d} regs\u2020" in t for t in labels), labels
    assert any(MARK in t for t in labels), labels
    assert any("+0 regs" in t for t in labels)  # block_sched: same count, not marked

    # the claim on registers is what the paper says (small overhead), so a negative value does not differ
    rows = {s["key"]: s["value"] for s in res.summary}
    for claim in CLAIMS:
        if isinstance(claim, Claim) and "extra_registers" in claim.left:
            assert evaluate("kernel_overhead", claim, rows).status != DIFFERS, claim.id
