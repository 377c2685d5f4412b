"""Ranking and answer policy, in one place: the query's shape, fusion of the channels, the
ranking signals and the learned ranker, confidence, relevance and focus, when to rewrite a query
and how its results merge, rerank providers' scores, and selection's gate. Pure functions of their
inputs: the services gather raw features and call these; no I/O here."""
