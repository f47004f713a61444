"""Fig. 10c workload: PyTorch SDPA restricted to the memory-efficient (CUTLASS fmha) backend.

Collect with ``neutrino -p dmat -k fmha python dmat/fig10c.py`` (its kernels are named fmha_...).
"""

from __future__ import annotations

import sys

import workload_common


def attn(q, k, v, scale):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=False, scale=scale)


if __name__ == "__main__":
    sys.exit(workload_common.run(__doc__, attn))
