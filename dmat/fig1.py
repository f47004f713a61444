"""Fig. 1 workload: Triton FlashAttention-2, BLOCK_M 128, BLOCK_N 64, 2 stages, 8 warps.

Collect with ``neutrino -p dmat -k attn python dmat/fig1.py``.
"""

from __future__ import annotations

import sys

import workload_common

from neutrino_ae.workloads import attention

BLOCK_M, BLOCK_N, NUM_STAGES, NUM_WARPS = 128, 64, 2, 8


def attn(q, k, v, scale):
    return attention.forward(q, k, v, scale, BLOCK_M, BLOCK_N, NUM_STAGES, NUM_WARPS)


if __name__ == "__main__":
    sys.exit(workload_common.run(__doc__, attn))
