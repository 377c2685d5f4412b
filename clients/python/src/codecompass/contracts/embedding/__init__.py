"""Contract of the embedding service: its messages as domain types and their converters."""
