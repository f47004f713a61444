"""Interval and slot algorithms shared by block and warp scheduling (numpy, with numba kernels when available)."""
