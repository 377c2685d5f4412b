"""Embedding service: turns chunk texts and queries into vectors.

One provider answers per process, chosen by the configured profile and the
privacy gates (see `profiles`). The local `code-small` profile (our fine-tune,
committed in models/code_small/) is the default and needs no network; external providers
only run when both gates are open.
"""
