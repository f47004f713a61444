"""Reproduction suite for Neutrino (OSDI'25): trace formats, sample bundle, shared helpers.

This package is the only code that knows a Neutrino file format; the per-figure folders and the
notebooks call it.
"""

from neutrino_ae.errors import BundleError, InputError, NeutrinoAEError, TraceFormatError

__version__ = "0.1.0"

__all__ = ["BundleError", "InputError", "NeutrinoAEError", "TraceFormatError", "__version__"]
