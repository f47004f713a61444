"""Reporting, one subpackage per job: ``section`` (the contract, the registry, the section driver),
``results`` (results files, summary, compare, tables), ``claims`` (the paper's claims and the verdict),
``figures`` (the style, the figure process, Perfetto timelines), ``command`` (where outputs go, the paths
a user gives, the per-figure scripts' plumbing)."""
