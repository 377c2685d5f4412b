"""Contract of the selection service: its messages as domain types and their converters."""
