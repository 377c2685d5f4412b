"""The index's read side: `searcher` answers from the index as it stands through
`chunk_reader.ChunkReader`, a handle with no write method, with `hybrid` (first-stage
candidates) and `readcache` (what a reader keeps between searches of one version). It never
imports `retrieval/index/` (tests/unit/test_layering.py)."""
