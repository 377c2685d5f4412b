"""Index progress on stderr: a redrawn bar on a terminal, plain lines otherwise."""

from __future__ import annotations

from typing import TextIO

from codecompass.contracts.retrieval.model import IndexPhase, IndexProgress

BAR_WIDTH = 24
# Without a terminal every line stays in the log (CI, a pipe): a line when a phase starts and one
# per tenth of its work shows it moving, and a long index no longer writes a line a second.
PLAIN_STEPS = 10


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
    if progress.phase is IndexPhase.SHARDS:
        # Workers started elsewhere (an Indexed Job's pods): the writer sees only who delivered.
        parts.append(f"waiting for {progress.shards_total} shard workers (Indexed Job): "
                     f"{progress.shards_done} reported")
        parts.append(f"files {progress.files_done}/{progress.files_total}")
        return "  ".join(parts)
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
        # Per phase, the last tenth printed: a sync alternates chunking and writing once per
        # flush, and a phase seen again prints only when its own progress moved on.
        self._plain_steps: dict[IndexPhase, int] = {}
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
        fraction = _fraction(progress)
        step = int(fraction * PLAIN_STEPS) if fraction is not None else -1
        if progress.phase not in self._plain_steps or step > self._plain_steps[progress.phase]:
            self._stream.write(describe(progress) + "\n")
            self._stream.flush()
            self._plain_steps[progress.phase] = step

    def close(self) -> None:
        if self._tty and self._drawn:
            self._stream.write("\n")
            self._stream.flush()
