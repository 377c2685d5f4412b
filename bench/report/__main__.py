"""`python -m bench.report [--check]`: rewrite the generated sections (bench/report/sections.py)."""

from bench.report.sections import main

if __name__ == "__main__":
    raise SystemExit(main())
