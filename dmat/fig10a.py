"""Fig. 10a workload: Triton FlashAttention-2, BLOCK_M 64, BLOCK_N 64, 2 stages, 4 warps.

Collect with ``neutrino -p dmat -k attn python dmat/fig10a.py``.
"""

from __future__ import annotations

import sys

import workload_common

from neutrino_ae.workloads import attention

BLOCK_M, BLOCK_N, NUM_STAGES, NUM_WARPS = 64, 64, 2, 4


def attn(q, k, v, scale):
    return attention.forward(q, k, v, scale, BLOCK_M, BLOCK_N, NUM_STAGES, NUM_WARPS)


if __name__ == "__main__":
    sys.exit(workload_common.run(__doc__, attn))
