"""README tables generated from benchmark results files: `python -m bench.report` (sections.py).

One module per report family renders the results kinds its benchmarks write; tables.py holds the
Markdown pieces they all build from.
"""
