"""Sample-bundle generator: a documented GPU execution model (docs/sample-model.md) rendered into
the paper's trace.zip layout. ``generate_bundle(out, scale="small", seed=0)``."""

from __future__ import annotations

from neutrino_ae.sample.generate import GENERATOR_VERSION, SCALES, config_for, ensure_sample_bundle, generate_bundle

__all__ = ["GENERATOR_VERSION", "SCALES", "config_for", "ensure_sample_bundle", "generate_bundle"]
