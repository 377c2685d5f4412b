"""Sizes on disk, for reports about indexes and state folders."""

from __future__ import annotations

import os
from pathlib import Path


def tree_bytes(folder: str | Path) -> int:
    """Bytes of the files below `folder` (links not followed); 0 when it does not exist. Files
    removed while it walks (a sync dropping old versions) are not counted."""
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total
