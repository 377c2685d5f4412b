"""Contract of the rerank service: its messages as domain types and their converters."""
