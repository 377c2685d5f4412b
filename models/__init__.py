"""Training pipelines for our own code models (issue 16) and their committed artifacts."""
