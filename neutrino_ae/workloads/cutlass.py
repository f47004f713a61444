"""The CUTLASS benchmark programs of the artifact (Table 2 and Fig. 12 profile them), by key.

They are built from the artifact's CUTLASS checkout (``prepare_env.py --install``) into
:func:`neutrino_ae.workloads.envcheck.cutlass_bin_dir`; a key maps to the program and its arguments.
"""

from __future__ import annotations

# Distinct keys: the source notebook's dict used "gemm" twice and silently lost plain GEMM.
CUTLASS_OPS: dict[str, list[str]] = {
    "gemm": ["gemm", "--iterations=100"],
    "gemm-streamk": ["gemm-streamk", "--iterations=100"],
    "conv": ["conv", "--n=256", "--h=56", "--w=56", "--c=128", "--k=128", "--r=3", "--s=3"],
}
