"""The gateway: decides what runs for a query, in which order and within which time budget."""
