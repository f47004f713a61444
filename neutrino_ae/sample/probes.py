"""The probes the bundle's traces were "collected" with: probe.toml bodies and their datamodels.

PTX bodies are short, plausible renderings of Neutrino's built-in probes; only ``datamodel`` and
``position`` matter to the analyses.
"""

from __future__ import annotations

from dataclasses import dataclass

from neutrino_ae.formats.level import Level


@dataclass(frozen=True)
class ProbeDef:
    name: str
    level: Level
    bytes: int  # per unit (per record slot for count datamodels)
    count: bool
    position: str
    before: str
    after: str
    analyze_hook: str | None = None
    #: key order of the probe's table, as in Neutrino's tool file (and so in a trace dir's probe.toml)
    key_order: tuple[str, ...] = ("position", "datamodel", "before", "after")

    @property
    def datamodel(self) -> str:
        return f"{self.level.name.lower()}:{self.bytes}" + (":count" if self.count else "")

    def toml_tables(self) -> dict[str, dict[str, str]]:
        values = {"position": self.position, "datamodel": self.datamodel, "before": self.before, "after": self.after}
        return {self.name: {k: values[k] for k in self.key_order if values[k]}}


_BLOCK_BEFORE = """mov.u64 %lstart, %clock64;
mov.u32 %smid_r, %smid;
"""
_BLOCK_AFTER = """mov.u64 %lend, %clock64;
sub.u64 %elapse64, %lend, %lstart;
cvt.u32.u64 %elapse, %elapse64;
SAVE.u64 {%lstart};
SAVE.u32 {%elapse, %smid_r};
"""

PROBES: dict[str, ProbeDef] = {
    "block_sched": ProbeDef("block_sched", Level.WARP, 16, False, "kernel", _BLOCK_BEFORE, _BLOCK_AFTER,
                            "block_sched.py"),
    "warp_sched": ProbeDef("warp_sched", Level.WARP, 16, False, "kernel", _BLOCK_BEFORE, _BLOCK_AFTER, None),
    "gmem_bytes": ProbeDef(
        "gmem_bytes", Level.THREAD, 8, False, "ld.global:st.global:cp.async",
        "", "add.u32 %sync_bytes, %sync_bytes, OUT_BYTES;\n", "gmem_bytes.py"),
    "tensorop_count": ProbeDef(
        "tensorop_count", Level.THREAD, 8, False, "mma.sync:wgmma", "",
        "add.u64 %mma_count, %mma_count, 1;\n", "tensorop_count.py"),
    "dmat": ProbeDef(
        "dmat", Level.THREAD, 16, True, "ld.global:st.global:cp.async",
        "mov.u64 %clk, %clock64;\nsub.u64 %clk, %clk, %entry_clock;\nSAVE.u64 {%clk, ADDR};\n", "",
        "dmat.py", key_order=("position", "before", "datamodel")),
}
