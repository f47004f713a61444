"""The two distributions the model draws from, parameterised by mean and coefficient of variation."""

from __future__ import annotations

import numpy as np


def gamma(rng: np.random.Generator, mean: float, cv: float, size: int | tuple[int, ...]) -> np.ndarray:
    """Gamma draws with the given mean and CV (std/mean); CV 0 gives the constant ``mean``.

    Gamma is non-negative and right-skewed, which is what latencies and gaps look like.
    """
    if mean < 0 or cv < 0:
        raise ValueError(f"gamma needs mean >= 0 and cv >= 0, got mean={mean}, cv={cv}")
    if cv == 0 or mean == 0:
        return np.full(size, float(mean))
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, mean / shape, size)


def lognormal_factor(rng: np.random.Generator, sigma: float, size: int | tuple[int, ...] | None = None):
    """Multiplicative noise with median 1 (``exp(N(0, sigma))``): run-to-run timing noise."""
    if sigma == 0:
        return np.ones(size) if size is not None else 1.0
    return np.exp(rng.normal(0.0, sigma, size))
