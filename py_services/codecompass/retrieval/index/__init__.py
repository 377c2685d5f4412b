"""The index's write side: the one writer that syncs a workspace into its LanceDB tables
(`writer`, `workspace_writer`, `sync`, `rows`, `background_embedder`), the workers it may
spread indexing over (`shard`), and `chunk_writer.ChunkWriter`, the only writable handle on a
chunk table. Nothing under `retrieval/search/` imports from here (tests/unit/test_layering.py)."""
