"""Evaluation: metrics over ranked results, results files, the services under test, the quality query set."""
