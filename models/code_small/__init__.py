"""code-small: MiniLM fine-tuned for natural-language -> TS/JS code retrieval (issue 16)."""
