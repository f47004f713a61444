"""How results are drawn: one figure style (:mod:`.style`) and its legibility rule (:mod:`.legibility`),
the figure process a command forks to draw beside its numbers (:mod:`.process`) and block/warp
timelines for Perfetto (:mod:`.perfetto`)."""
