"""Contract of the retrieval service: its messages as domain types, its errors, search filters and the converters."""
