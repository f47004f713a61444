"""Fig. 10b workload: PyTorch SDPA restricted to the FlashAttention backend.

Collect with ``neutrino -p dmat -k flash python dmat/fig10b.py`` (its kernels are named flash_fwd...).
"""

from __future__ import annotations

import sys

import workload_common


def attn(q, k, v, scale):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=False, scale=scale)


if __name__ == "__main__":
    sys.exit(workload_common.run(__doc__, attn))
