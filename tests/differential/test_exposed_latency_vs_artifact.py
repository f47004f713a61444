"""Fig. 12 beside the artifact's own ``plot(name, data)`` from its ``static.ipynb``.

The function's source is taken from the extracted tarball at test time (the notebook cell that
defines ``plot`` and reads the ``ncu``/``neutrino`` columns, found by content) and run as it is with
matplotlib's Agg backend and a ``plt`` whose ``show`` hands the figure back, on workload CSVs that
hypothesis writes (columns ``probe, original, ncu, neutrino, prologue, kernel, epilogue``; 1..6
probes; positive times). The bar heights read off its figure (``ax.containers``: the NCU bars, the
Neutrino bar drawn to the top of the stack, the epilogue bar drawn over its foot) must equal our
analysis' ``ncu_ratio``, the stacked segments' heights (``<part>_height``) and, in the labels,
``neutrino_ratio``.

What differs on purpose (docs/DESIGN.md, "Deviations from the artifact's scripts"): we draw the
prologue as its own segment (the artifact folds it into the kernel-coloured one; its prologue bar
is commented out), stack kernel, epilogue, prologue from the bottom (the artifact: epilogue, then
kernel + prologue), and draw what the parts leave of the Neutrino time as a hatched "unattributed"
segment, so our bar top is the measured ratio (the artifact's top is the parts' sum while its
label is the ratio); a repeated probe, a non-numeric cell or a zero original/neutrino/kernel time
is one ``error:`` line where the artifact plots a wrong bar or stops with a traceback; an empty
``ncu`` cell (no Nsight Compute) is labelled ``n/a`` where the artifact leaves the place empty.
"""

from __future__ import annotations

import ast
import json
import math
import tempfile
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from undrawn_analysis import leave_figures_undrawn  # noqa: E402

from exposed_latency import figures as el_figures  # noqa: E402
from exposed_latency import inputs as el_inputs  # noqa: E402
from exposed_latency.analysis import PARTS, ratios  # noqa: E402
from neutrino_ae.report.command.script import run_main  # noqa: E402
from neutrino_ae.report.section import driver, registry  # noqa: E402

SECTION = registry.get("exposed_latency")
cli_main = partial(driver.main, SECTION)
analyze = partial(driver.analyze_paths, SECTION)

RTOL = 1e-9


@pytest.fixture(scope="module")
def artifact_plot(artifact_tree: Path):
    """The artifact's ``plot`` function, compiled from its notebook; returns ``plot(name, data) -> figure``."""
    nb = json.loads((artifact_tree / "artifact" / "static.ipynb").read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    found = [s for s in cells if "def plot(" in s and 'data["ncu"]' in s and 'data["neutrino"]' in s]
    assert len(found) == 1, f"{len(found)} cells of static.ipynb look like the Fig. 12 plot"
    (fn,) = [n for n in ast.parse(found[0]).body if isinstance(n, ast.FunctionDef) and n.name == "plot"]
    source = ast.get_source_segment(found[0], fn)
    shown: list = []

    class Pyplot:
        """pyplot, except that ``show`` keeps the figure for the test instead of displaying it."""

        def __getattr__(self, name):
            return getattr(plt, name)

        @staticmethod
        def show():
            shown.append(plt.gcf())

    namespace = {"np": np, "pd": pd, "plt": Pyplot()}
    exec(compile(source, "static.ipynb:plot", "exec"), namespace)

    def run(name: str, data: pd.DataFrame):
        shown.clear()
        namespace["plot"](name, data)
        assert len(shown) == 1
        return shown[0]

    return run


def artifact_bars(fig) -> dict[str, np.ndarray | list[str]]:
    """What the artifact's figure shows, per probe: bar heights of its three containers, the labels."""
    (ax,) = fig.axes
    ncu, top, epilogue = ([p.get_height() for p in c.patches] for c in ax.containers)
    labels = [t.get_text() for t in ax.texts]   # bar_label: the NCU bars' labels, then the Neutrino bars'
    n = len(ncu)
    return {"ncu": np.array(ncu), "top": np.array(top), "epilogue": np.array(epilogue),
            "ncu_labels": labels[:n], "neutrino_labels": labels[n:],
            "probes": [t.get_text() for t in ax.get_xticklabels()]}


def write_csv(path: Path, rows: list[tuple]) -> Path:
    """A workload CSV as the collector writes one (our own writer: plain text, floats as repr)."""
    lines = ["probe,original,ncu,neutrino,prologue,kernel,epilogue"]
    lines += [",".join([probe, *(repr(v) for v in values)]) for probe, *values in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


# probe names pandas would read as NaN ("nan", "null") are left out: the artifact's read_csv turns them
# into a missing label; ours keeps the text (dtype=str, no NA values).
PROBE = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True).filter(lambda s: s not in ("nan", "null"))
TIME = st.floats(1e-6, 1e9, allow_nan=False, allow_infinity=False)


@st.composite
def workload_rows(draw):
    probes = draw(st.lists(PROBE, min_size=1, max_size=6, unique=True))
    rows = []
    for probe in probes:
        original, ncu, neutrino, prologue, kernel, epilogue = (draw(TIME) for _ in range(6))
        if draw(st.booleans()):  # a consistent row: the parts are the Neutrino time (what the hook logs)
            neutrino = prologue + kernel + epilogue
        rows.append((probe, original, ncu, neutrino, prologue, kernel, epilogue))
    return rows


def _label_value(label: str) -> float:
    assert label.endswith("x"), label
    return float(label[:-1])


@settings(max_examples=50, deadline=None)
@given(rows=workload_rows())
def test_fig12_bars_equal_the_artifacts_plot(artifact_plot, rows):
    with tempfile.TemporaryDirectory() as tmp:
        csv = write_csv(Path(tmp) / "attn.csv", rows)
        fig = artifact_plot("attn", pd.read_csv(csv))   # as its notebook calls it: plot("attn", pd.read_csv(..))
        try:
            art = artifact_bars(fig)
        finally:
            plt.close(fig)
        r = ratios(el_inputs.read_workload_csv(csv))

    assert art["probes"] == list(r["probe"])
    np.testing.assert_allclose(art["ncu"], r["ncu_ratio"], rtol=RTOL)
    # the artifact's stacked bar: epilogue share x ratio at the foot, up to the sum of the three shares x ratio
    np.testing.assert_allclose(art["epilogue"], r["epilogue_height"], rtol=RTOL)
    np.testing.assert_allclose(art["top"], sum(r[f"{p}_height"] for p in PARTS), rtol=RTOL)
    # its kernel-coloured segment is our kernel and prologue segments together
    np.testing.assert_allclose(art["top"] - art["epilogue"], r["kernel_height"] + r["prologue_height"],
                               rtol=RTOL, atol=RTOL * art["top"].max())
    # labels: "1.23x", the ratios to two decimals
    for label, ours in zip(art["ncu_labels"], r["ncu_ratio"], strict=True):
        assert math.isclose(_label_value(label), ours, abs_tol=0.005 + RTOL * ours)
    for label, ours in zip(art["neutrino_labels"], r["neutrino_ratio"], strict=True):
        assert math.isclose(_label_value(label), ours, abs_tol=0.005 + RTOL * ours)
    # our bar top is the measured ratio wherever the parts do not exceed it (the rest: "unattributed")
    ours_top = sum(r[f"{p}_height"] for p in (*PARTS, "unattributed"))
    np.testing.assert_allclose(ours_top, np.maximum(r["neutrino_ratio"], art["top"]), rtol=RTOL)


def _ours_stack(r: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """Our drawn Neutrino bar: the segment names bottom first and each probe's top (from the figure)."""
    fig = el_figures.draw_workload("attn", r, synthetic=False)
    try:
        (ax,) = fig.axes
        stacks = ax.containers[1:]
        names = [c.get_label().removeprefix("Neutrino (").removesuffix(")") for c in stacks]
        top = np.array([p.get_y() + p.get_height() for p in stacks[-1].patches])
    finally:
        plt.close(fig)
    return names, top


def test_parts_short_of_the_neutrino_time_the_artifacts_top_is_their_sum_ours_the_ratio(artifact_plot, tmp_path):
    csv = write_csv(tmp_path / "attn.csv", [("block_sched", 1.0, 50.0, 2.0, 0.1, 1.0, 0.4)])  # parts 1.5 of 2.0
    fig = artifact_plot("attn", pd.read_csv(csv))
    art = artifact_bars(fig)
    plt.close(fig)
    assert art["top"] == pytest.approx([1.5]) and art["neutrino_labels"] == ["2.00x"]  # top 1.5, label 2.00x
    r = ratios(el_inputs.read_workload_csv(csv))
    names, top = _ours_stack(r)
    assert names == ["epilogue", "kernel", "prologue", "unattributed"]
    assert top == pytest.approx([2.0])
    assert r["unattributed_height"].tolist() == pytest.approx([0.5])


def test_consistent_parts_both_tops_are_the_ratio_in_the_papers_stacking_order(artifact_plot, tmp_path):
    csv = write_csv(tmp_path / "attn.csv", [("dmat", 1.0, 30.0, 2.0, 0.25, 1.5, 0.25)])
    fig = artifact_plot("attn", pd.read_csv(csv))
    (ax,) = fig.axes
    art_names = [c.get_label() for c in ax.containers[1:]]
    art = artifact_bars(fig)
    plt.close(fig)
    # artifact: a kernel-coloured bar to the top (kernel + prologue), the epilogue bar drawn over its foot
    assert art_names == ["Neutrino (Kernel)", "Neutrino (Epilogue)"]
    assert art["top"] == pytest.approx([2.0]) and art["epilogue"] == pytest.approx([0.25])
    names, top = _ours_stack(ratios(el_inputs.read_workload_csv(csv)))
    # ours: the same order (epilogue at the foot, then kernel), the prologue as its own segment on top
    assert names == ["epilogue", "kernel", "prologue"] and top == pytest.approx([2.0])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the artifact's infinite bar
@pytest.mark.parametrize("what, rows, error", [
    ("a repeated probe", [("dmat", 1.0, 2.0, 2.0, 0.1, 1.5, 0.4), ("dmat", 1.0, 3.0, 2.0, 0.1, 1.5, 0.4)],
     "probe 'dmat' is in rows 2 and 3: one row per probe"),
    ("a zero original time", [("dmat", 0.0, 2.0, 2.0, 0.1, 1.5, 0.4)],
     "column 'original' row 2 (probe dmat): 0.0 is not positive"),
    ("a zero kernel time", [("dmat", 1.0, 2.0, 2.0, 0.1, 0.0, 0.4)],
     "column 'kernel' row 2 (probe dmat): 0.0 is not positive"),
])
def test_bad_rows_the_artifact_plots_ours_refuses_in_one_line(artifact_plot, tmp_path, capsys, what, rows, error):
    csv = write_csv(tmp_path / "attn.csv", rows)
    plt.close(artifact_plot("attn", pd.read_csv(csv)))   # it draws (a doubled bar, an infinite ratio, ...)
    assert run_main(cli_main, [str(csv), "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: {csv}: {error}\n"


def test_a_non_numeric_cell_the_artifact_raises_ours_one_line(artifact_plot, tmp_path, capsys):
    csv = tmp_path / "attn.csv"
    csv.write_text("probe,original,ncu,neutrino,prologue,kernel,epilogue\ndmat,1.0,2.0,n/a ms,0.1,1.5,0.4\n")
    with pytest.raises(TypeError):
        artifact_plot("attn", pd.read_csv(csv))
    plt.close("all")
    assert run_main(cli_main, [str(csv), "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: {csv}: column 'neutrino' row 2 (probe dmat): 'n/a ms' is not a number\n"


def test_no_ncu_time_the_artifact_shows_nothing_ours_n_a(artifact_plot, tmp_path, monkeypatch):
    csv = tmp_path / "attn.csv"
    csv.write_text("probe,original,ncu,neutrino,prologue,kernel,epilogue\ndmat,1.0,,2.0,0.1,1.5,0.4\n")
    fig = artifact_plot("attn", pd.read_csv(csv))
    art = artifact_bars(fig)
    plt.close(fig)
    assert math.isnan(art["ncu"][0]) and art["ncu_labels"] == [""]   # no bar, no label
    leave_figures_undrawn(monkeypatch)  # our table's text and data are read, not our figure
    res = analyze([csv], tmp_path / "out")
    assert "n/a" in res.text.splitlines()[2] and math.isnan(res.data["rows"][0]["ncu_ratio"])
