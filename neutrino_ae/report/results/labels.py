"""The marks every output made from sample or unlabelled data carries, as text (no matplotlib: an HTML table
or a printed line needs them before, or without, any figure)."""

SYNTHETIC_LABEL = "SYNTHETIC DATA (sample model or emulated GPU, not a GPU measurement)"
UNKNOWN_PROVENANCE_LABEL = "UNVERIFIED PROVENANCE: no bundle.json, the data may be synthetic"
