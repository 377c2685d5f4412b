"""The `code-static` embedding model: training (train.py, vocabulary.py), the committed model/ and its card."""
