"""Trace bundles: the manifest (kind, digests, ground truth) and fetching/extracting the paper bundle."""
