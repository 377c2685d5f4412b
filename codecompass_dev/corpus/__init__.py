"""The public repositories the benchmarks and the training corpus are built from, and the rules that keep
the independent-evaluation repositories out of both."""
