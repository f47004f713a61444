"""One module per on-disk format; each docstring states the facts it encodes (see docs/DESIGN.md)."""
