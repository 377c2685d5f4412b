"""From the analysis service's chunk stream to batches of index rows: the one step a sync's two
passes (`sync.Syncer`: lexical-first and full) and a shard worker (`shard.worker`) share.

Files are chunked `files_per_call` at a time (one ChunkFiles stream each: that bounds a
stream's deadline and the work a failure loses); each file the stream answers for joins the
batch in hand, and a batch goes to `write` once its rows reach the batch size. What a write is
(a table version and a catalog commit, a version without one, an uncommitted fragment), what a
vanished file means and what gets reported are the callers' callbacks; the order in which the
step calls them is what makes their reports true (a file is reported after its due write).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from codecompass.common.chunks import Chunk
from codecompass.contracts.analysis.model import ChunkedFile, FileStatus


@dataclass(frozen=True)
class BatchSizes:
    """Rows a batch holds before it is written: `first`, then twice the last size, up to `most`
    (`first` == `most`: every batch the same)."""

    first: int
    most: int

    def after(self, size: int) -> int:
        return min(size * 2, self.most)


@dataclass(frozen=True)
class Batch:
    """Files chunked since the last write, in the order they came, vanished ones left out."""

    files: tuple[ChunkedFile, ...]
    # Files the stream has answered for so far: this batch's, earlier ones' and vanished ones.
    files_done: int

    @property
    def rows(self) -> list[Chunk]:
        """The chunks to write; a skipped file is an entry in the catalog, not rows."""
        return [c for f in self.files if f.status != FileStatus.SKIPPED for c in f.chunks]


@dataclass(frozen=True)
class Chunked:
    """How the step ended: `rest` is chunked and not written (the caller's last write)."""

    rest: Batch
    # `stop` said so before a call: the files of the calls not made were never asked for.
    stopped: bool


def chunk_in_batches(
    chunk_files: Callable[[list[str]], Iterable[ChunkedFile]],
    paths: list[str],
    *,
    files_per_call: int,
    sizes: BatchSizes,
    write: Callable[[Batch], None],
    arrived: Callable[[ChunkedFile], None] = lambda _f: None,
    gone: Callable[[str], None] = lambda _p: None,
    after_file: Callable[[int], None] = lambda _n: None,
    stop: Callable[[], bool] = lambda: False,
) -> Chunked:
    """Chunk `paths` through `chunk_files` (one call's paths → that stream) and hand the files to
    `write` in batches of `sizes`. Per file the stream answers for: `arrived` before it joins the
    batch, or `gone` when it vanished; then the write it makes due; then `after_file` with the
    files done so far. `gone` also hears of each file a call's stream did not answer for. `stop`
    is asked before each call."""
    batch: list[ChunkedFile] = []
    held = 0
    write_at = sizes.first
    files_done = 0
    for call in _slices(paths, files_per_call):
        if stop():
            return Chunked(Batch(tuple(batch), files_done), stopped=True)
        returned: set[str] = set()
        for chunked in chunk_files(call):
            returned.add(chunked.relative_path)
            files_done += 1
            if _vanished(chunked):
                gone(chunked.relative_path)
            else:
                arrived(chunked)
                batch.append(chunked)
                if chunked.status != FileStatus.SKIPPED:
                    held += len(chunked.chunks)
            if held >= write_at:
                write(Batch(tuple(batch), files_done))
                batch, held = [], 0
                write_at = sizes.after(write_at)
            # After the write: a report never counts a file whose due write has not happened.
            after_file(files_done)
        # A file the analysis service did not answer for vanished with no word from it.
        for path in call:
            if path not in returned:
                gone(path)
    return Chunked(Batch(tuple(batch), files_done), stopped=False)


def _vanished(chunked: ChunkedFile) -> bool:
    """The file was gone when the analysis service came to read it: a delete or a checkout
    under the sync. It leaves the index; the next scan adds whatever took its place."""
    return chunked.status == FileStatus.SKIPPED and chunked.skip_reason == "vanished"


def _slices(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
