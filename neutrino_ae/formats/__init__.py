"""One module per on-disk format. See ../shared/docs/neutrino-formats.md for the facts they encode."""
