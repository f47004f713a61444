"""Trace bundles: the Bundle a run reads (kind, digests, ground truth, provenance), the bundle.json manifest,
and fetching/extracting the paper bundle."""
