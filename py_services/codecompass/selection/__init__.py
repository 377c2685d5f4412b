"""SelectionService: turns ranked candidates into the answer an agent reads (gate, focus, merging,
rendering, token budget)."""
