"""A sharded index's plan: the files of each shard (`shard_of`, `make_plan`) and what every
worker needs to index them (`ShardPlan`), nothing secret; and how a shard fails."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codecompass.common.chunks import Language
from codecompass.contracts.analysis.model import FileEntry
from codecompass.contracts.retrieval.errors import RetrievalError
from codecompass.retrieval.catalog import IndexIdentity
from codecompass.retrieval.index.sync import SyncTuning

PLAN_FORMAT = 1


class ShardFailed(RetrievalError):
    """A shard could not be indexed; nothing was committed. The message names the shard."""


class InvalidPlan(RetrievalError):
    """A plan file that cannot be run; the message says why."""


def shard_of(relative_path: str, shards: int) -> int:
    """The shard a file belongs to: a hash of its path that every process and every run agree on
    (Python's `hash` is salted per process)."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    digest = hashlib.blake2b(relative_path.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


@dataclass(frozen=True)
class ShardPlan:
    """What every worker of one sharded index needs, and nothing secret."""

    plan_id: str
    root: str
    index_uri: str
    identity: IndexIdentity
    shards: tuple[tuple[FileEntry, ...], ...]
    # Workers ask the embedding service for primary vectors; otherwise the writer's background
    # embedder fills them after the commit (the static channel's vectors are there from the start).
    embed: bool = False
    # One analysis service address per shard (a worker per pod, each with its own service, as
    # the Node service type-checks on one thread); empty: ANALYSIS_ADDR for every shard.
    analysis: tuple[str, ...] = ()
    files_per_call: int = SyncTuning.files_per_call
    # Chunks a worker holds before staging them: bounds its memory; each batch is a fragment.
    batch_chunks: int = SyncTuning.max_flush_chunks

    def check_shard(self, shard: int) -> None:
        if not 0 <= shard < len(self.shards):
            raise InvalidPlan(f"shard {shard} is not in the plan "
                              f"(it has {len(self.shards)}: 0 to {len(self.shards) - 1})")

    def to_json(self) -> dict:
        return {
            "format": PLAN_FORMAT,
            "plan_id": self.plan_id,
            "root": self.root,
            "index_uri": self.index_uri,
            "identity": json.loads(self.identity.to_json()),
            "embed": self.embed,
            "analysis": list(self.analysis),
            "files_per_call": self.files_per_call,
            "batch_chunks": self.batch_chunks,
            "shards": [[_file_json(f) for f in files] for files in self.shards],
        }

    @classmethod
    def from_json(cls, data: Mapping) -> ShardPlan:
        if data.get("format") != PLAN_FORMAT:
            raise InvalidPlan(f"plan format {data.get('format')!r} is not {PLAN_FORMAT}: the writer that made it "
                              "runs another version")
        try:
            plan = cls(
                plan_id=str(data["plan_id"]),
                root=str(data["root"]),
                index_uri=str(data["index_uri"]),
                identity=IndexIdentity.from_json(json.dumps(data["identity"])),
                shards=tuple(tuple(_file_of(f) for f in files) for files in data["shards"]),
                embed=bool(data["embed"]),
                analysis=tuple(str(a) for a in data["analysis"]),
                files_per_call=int(data["files_per_call"]),
                batch_chunks=int(data["batch_chunks"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidPlan(f"the plan is malformed: {type(exc).__name__}: {exc}") from None
        if plan.analysis and len(plan.analysis) != len(plan.shards):
            raise InvalidPlan(f"the plan names {len(plan.analysis)} analysis services for {len(plan.shards)} shards")
        return plan


def make_plan(
    root: str,
    index_uri: str,
    identity: IndexIdentity,
    files: Sequence[FileEntry],
    shards: int,
    *,
    embed: bool = False,
    analysis: Sequence[str] = (),
    tuning: SyncTuning | None = None,
) -> ShardPlan:
    """A plan that splits `files` (the writer's scan) into `shards` by `shard_of`."""
    tuning = tuning or SyncTuning()
    split: list[list[FileEntry]] = [[] for _ in range(shards)]
    for file in sorted(files, key=lambda f: f.relative_path):
        split[shard_of(file.relative_path, shards)].append(file)
    return ShardPlan(plan_id=uuid.uuid4().hex, root=root, index_uri=index_uri, identity=identity,
                     shards=tuple(tuple(s) for s in split), embed=embed, analysis=tuple(analysis),
                     files_per_call=tuning.files_per_call, batch_chunks=tuning.max_flush_chunks)


def _file_json(file: FileEntry) -> list:
    return [file.relative_path, file.size_bytes, file.mtime_ns, file.content_hash, file.language.value]


def _file_of(item: list) -> FileEntry:
    path, size, mtime, content_hash, language = item
    return FileEntry(str(path), int(size), int(mtime), str(content_hash), Language(language))
