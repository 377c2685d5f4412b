"""RerankService: re-scores first-stage search candidates with a reranker, falling back to the first stage."""
