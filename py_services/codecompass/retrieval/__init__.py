"""Retrieval service: keeps a LanceDB index of each workspace in sync with its files and
answers hybrid lexical + semantic searches (gRPC RetrievalService)."""

from codecompass.common.lean_imports import REST_NAMESPACE_CLIENT, without_package_init

# Every module of this package imports it first, so this runs before the process's first
# `import lancedb` (common/lean_imports.py says what it saves).
without_package_init(REST_NAMESPACE_CLIENT)
