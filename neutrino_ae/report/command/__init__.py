"""What every entry point shares: where things go on disk (:mod:`.layout`), the paths a user gives,
checked before any work (:mod:`.paths`), and the per-figure scripts' plumbing (:mod:`.script`)."""
