"""Reporting: the section contract, results files, summary, compare, figure style, CLI plumbing."""
