"""CodeCompass's development-side library: what the benchmarks (bench/) and the model training
pipelines (models/) share. Never shipped in the product: no distribution packages it, and no
product package (codecompass, codecompass_gateway, codecompass_cli) imports it.

corpus/      the public repositories both read: pinned commits, git mirrors and checkouts, the
             off-limits list, the benchmark workspaces assembled from them
queries/     query mining: symbols extracted by the TypeScript compiler, the rules that turn
             symbols, commits and docs into (text, answer) pairs, and the text utilities they use
evaluation/  scoring a ranked list, writing a results file, starting the services, reading the
             quality query set and a quality run's index

It imports neither bench nor models (tests/unit/test_layering.py): a benchmark's script or a
training pipeline uses it, never the other way round.
"""
