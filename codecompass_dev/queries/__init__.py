"""Query mining: (text, answer) pairs drawn by written rules from a repository's symbols, commits and docs."""
