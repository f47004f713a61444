"""Fig. 10a workload: Triton FlashAttention-2, BLOCK_M 64, BLOCK_N 64, 2 stages, 4 warps.

Collect with ``neutrino -p dmat -k attn python dmat/fig10a.py``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import workload_common  # noqa: E402

from neutrino_ae.workloads import attention  # noqa: E402

BLOCK_M, BLOCK_N, NUM_STAGES, NUM_WARPS = 64, 64, 2, 4


def attn(q, k, v, scale):
    return attention.forward(q, k, v, scale, BLOCK_M, BLOCK_N, NUM_STAGES, NUM_WARPS)


if __name__ == "__main__":
    sys.exit(workload_common.run(__doc__, attn))
