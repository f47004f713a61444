"""Reporting: the section contract and registry, the output layout, results files, summary, claims, compare,
figure style, CLI plumbing."""
