"""Retrieval service: keeps a LanceDB index of each workspace in sync with its files and
answers hybrid lexical + semantic searches (gRPC RetrievalService)."""
