"""Index progress on stderr: a redrawn bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import time
from typing import TextIO

from codecompass.retrieval.state import IndexPhase, IndexProgress

BAR_WIDTH = 24
# Without a terminal a line per message would flood CI logs; one per interval is enough.
PLAIN_INTERVAL_S = 2.0


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def _fraction(progress: IndexProgress) -> float | None:
    if progress.phase is IndexPhase.DONE:
        return 1.0
    if progress.phase is IndexPhase.EMBEDDING and progress.embeddings_total:
        return progress.embeddings_done / progress.embeddings_total
    if progress.files_total:
        return progress.files_done / progress.files_total
    return None


def describe(progress: IndexProgress) -> str:
    parts = [f"{progress.phase.value:<9}"]
    # The embedding phase works on chunks, not files; a "files 0/0" there only confuses.
    if progress.files_total:
        parts.append(f"files {progress.files_done}/{progress.files_total}")
    parts.append(f"chunks {progress.chunks_done}")
    if progress.embeddings_total:
        parts.append(f"embedded {progress.embeddings_done}/{progress.embeddings_total}")
    if progress.embeddings_per_second > 0:
        parts.append(f"{progress.embeddings_per_second:.1f} emb/s")
    # The service sends a negative ETA when it has none yet.
    parts.append(f"ETA {format_eta(progress.eta_seconds if progress.eta_seconds >= 0 else None)}")
    return "  ".join(parts)


class ProgressReporter:
    def __init__(self, stream: TextIO, is_tty: bool | None = None) -> None:
        self._stream = stream
        self._tty = stream.isatty() if is_tty is None else is_tty
        self._last_plain = 0.0
        self._last_phase = ""
        self._drawn = False

    def update(self, progress: IndexProgress) -> None:
        if self._tty:
            fraction = _fraction(progress)
            if fraction is None:
                bar = "[" + "?" * BAR_WIDTH + "]     "
            else:
                filled = int(fraction * BAR_WIDTH)
                bar = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction * 100:3.0f}%"
            self._stream.write(f"\r\x1b[2K{bar} {describe(progress)}")
            self._stream.flush()
            self._drawn = True
            return
        now = time.monotonic()
        if progress.phase.value != self._last_phase or now - self._last_plain >= PLAIN_INTERVAL_S:
            self._stream.write(describe(progress) + "\n")
            self._stream.flush()
            self._last_plain = now
            self._last_phase = progress.phase.value

    def close(self) -> None:
        if self._tty and self._drawn:
            self._stream.write("\n")
            self._stream.flush()
