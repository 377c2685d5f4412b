"""Contract of the analysis service (Node, CodeAnalysisService): its messages as domain types and their converters."""
