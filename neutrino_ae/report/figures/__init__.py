"""How results are drawn: one figure style (:mod:`.style`), the figure process a command forks to draw
beside its numbers (:mod:`.process`) and block/warp timelines for Perfetto (:mod:`.perfetto`)."""
