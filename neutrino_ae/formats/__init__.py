"""One module per on-disk format; each docstring states the facts it encodes (checked against the real Neutrino: docs/DESIGN.md)."""
