"""Settings for every CodeCompass Python process, parsed once into frozen objects.

Sources, strongest first: environment variables, the user settings file
(YAML: ``$CODECOMPASS_CONFIG``, else ``~/.config/codecompass/config.yaml``),
built-in defaults. Every setting is declared once in ``_FIELDS`` so parsing,
validation, error messages and the README table cannot drift apart.

Secrets (the embedding API key) come only from the environment: a key in a
config file is refused rather than ignored, because a silently ignored key
leads people to believe the file is the place for it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from codecompass.common import hosts, names

EMBEDDING_PROFILES = ("minilm", "e5-small", "code-static", "code-small", "voyage", "openai-compatible")
API_KEY_ENV = "CODECOMPASS_EMBEDDING_API_KEY"
RERANK_PROVIDERS = ("local", "voyage", "cohere", "llm")
# Roles of a retrieval process (retrieval/engine.py): both, the index writer alone, a searcher alone.
RETRIEVAL_ROLES = ("all", "writer", "searcher")
# Who runs the workers of a sharded index (retrieval/index/shard/): the writer, as local processes,
# or someone else (the pods of a Kubernetes Indexed Job) that finds the plan in the index.
SHARD_RUNNERS = ("processes", "job")
RERANK_API_KEY_ENV = "CODECOMPASS_RERANK_API_KEY"
REWRITE_API_KEY_ENV = "CODECOMPASS_REWRITE_API_KEY"
GATEWAY_AUTH_TOKEN_ENV = "CODECOMPASS_GATEWAY_AUTH_TOKEN"
BIND_HOST_ENV = "CODECOMPASS_BIND_HOST"
# Seed 004: `off` never calls the embedding service (nor a model reranker), `rerank_only` builds
# no vectors but may rerank with a model, `hybrid` blends lexical and vector search.
SEMANTIC_MODES = ("off", "rerank_only", "hybrid")
# Only the levels every service accepts: the Node analysis service knows no CRITICAL, and a
# level that passes `codecompass config` must not stop `up` later.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
# The checkout (or installed copy) of the tool this code runs from: its services, its state.
CHECKOUT_ROOT = Path(__file__).resolve().parents[3]
_REDACTED = "***"


class ConfigError(Exception):
    """A setting is malformed; the message names the env var or config key."""


@dataclass(frozen=True)
class EmbeddingSettings:
    # Our fine-tuned encoder: on the quality benchmark's test split it beats MiniLM (hybrid MRR@10
    # 0.479 vs 0.467) and embeds ~1.5x faster (bench/results/models-latest.json).
    profile: str = "code-small"
    external_provider_enabled: bool = False
    allow_code_payload_to_external: bool = False
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    model: str | None = None
    dimensions: int | None = None
    timeout_s: float = 30.0
    max_retries: int = 3
    batch_size: int = 64
    max_tokens: int = 256

    @property
    def external_allowed(self) -> bool:
        """Both privacy gates (seed 004 FR-719) must be open to send code out."""
        return self.external_provider_enabled and self.allow_code_payload_to_external


@dataclass(frozen=True)
class RetrievalSettings:
    # Which roles this retrieval process serves: "all" (writer and searcher, the local
    # default), "writer" (sync, embed, maintain: one per index) or "searcher" (reads only).
    role: str = "all"
    # The index root: every index lives at <db_uri>/<key> (a local folder or s3://bucket/prefix).
    db_uri: str | None = None
    # Object-store options can carry cloud credentials, so repr leaves them out.
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)
    # Chosen on the dev split of bench/quality with MiniLM (MRR@10 over all query types: 0.1 ->
    # 0.551, 0.2 -> 0.552, 0.3 -> 0.548, 0.5 -> 0.530) and re-checked with code-small, which is
    # flat across it (0.2 -> 0.566, 0.3 -> 0.568, 0.4 -> 0.569, 0.5 -> 0.566): no reason to move.
    semantic_ratio: float = 0.2
    default_limit: int = 10
    # Candidates each channel contributes before ranking (a request may ask for more). The learned
    # ranker can only order what the channels bring: on the dev split a target is among the
    # candidates for 79.3% of questions at 60 a channel, 82.8% at 100 and 86.9% at 150, for 142,
    # 182 and 213 ms of searcher CPU per search (undici, 80 queries); 100 buys most of it within the
    # pipeline's 250 ms.
    candidate_pool: int = 100
    compact_every_n_syncs: int = 20
    # A workspace's first index above either limit needs force: a folder that large is more
    # often a slip (a parent folder, a checkout full of vendored code) than a project, and its
    # index costs many minutes.
    large_index_files: int = 20_000
    large_index_mb: int = 200
    # Static vectors (code-static) computed in process with every chunk written, searched for
    # the chunks the primary model has not embedded yet (retrieval/static_channel.py).
    static_channel: bool = True
    # The static model's folder; None: the committed models/code_static/model.
    static_model_dir: Path | None = None
    # The learned ranker's model file (LightGBM text, `make ranker`); None: the committed
    # models/ranker/model.txt. `learned_ranking` off, or no model file, ranks with the hand-set
    # stack (codecompass/policy/ranking.py) alone.
    learned_ranking: bool = True
    ranker_model: Path | None = None
    # How often a searcher checks an index for a version newer than the one it reads; None: 0
    # on a local disk (a directory listing per query), 1 s on an object store (a LIST request).
    searcher_refresh_s: float | None = None
    # A searcher keeps a local copy of an index on S3 (under <state_dir>/index-cache) and reads
    # that: every query reading the bucket measured 6x slower (retrieval/mirror.py).
    searcher_cache: bool = True
    # Who runs the workers of `IndexWorkspace(workers=N)`: "processes" (the writer starts them
    # here) or "job" (the writer posts the plan in the index and waits for workers started by
    # others, the pods of a Kubernetes Indexed Job: retrieval/index/shard/job.py).
    shard_runner: str = "processes"


@dataclass(frozen=True)
class RerankSettings:
    provider: str = "local"
    external_provider_enabled: bool = False
    allow_code_payload_to_external: bool = False
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    model: str | None = None
    # Share of the final score taken from a model reranker's score, blended by the gateway
    # (codecompass/policy/blend.py); the rest stays with the first-stage score so a reranker's
    # odd miss cannot bury an exact symbol match.
    weight: float = 0.65
    # Seed 001 FR-3: a reranker that has not answered in 2 s costs more than it adds.
    timeout_s: float = 2.0

    @property
    def external_allowed(self) -> bool:
        """Both privacy gates must be open to send code to a rerank provider."""
        return self.external_provider_enabled and self.allow_code_payload_to_external


@dataclass(frozen=True)
class SelectionSettings:
    # Token budget of one answer, headers included, when a request sets none; a request may ask
    # for up to 20,000 (Claude Code refuses a tool result over 25,000). Read off the recall-by-budget
    # curve of bench-pipeline (dev split; answers asked for B tokens / the ranked list within B):
    # 4,000: 0.679 / 0.714; 8,000: 0.721 / 0.770; 16,000: 0.721 / 0.783. The answer stops gaining
    # at 8,000 (its 30 candidates are all in by then) and the list gains 0.013 for twice the tokens.
    max_tokens: int = 8000
    # Relevance gate when a request sets none (relevance: codecompass/policy/relevance.py; the gateway
    # always sets one, its confidence_threshold). An answer whose best candidate is below it is a
    # low-confidence one: flagged, it keeps the closest candidates within a small budget; a confident
    # one keeps candidates down to 0.4 x it (the gate's rules: codecompass/policy/selection.py).
    min_relevance: float = 0.5
    # Rendering is a cosmetic step: past this the stored collapsed source answers instead.
    render_timeout_s: float = 2.0
    # Largest result a parent merged with its matching children may be; a larger parent is shown
    # on its own, at its own rank, and the children at theirs. On the dev split 2,500 kept MRR@10
    # (0.629 vs 0.635 unbounded) and lifted recall within 2,000 tokens (0.650 vs 0.630).
    merge_max_tokens: int = 2500


@dataclass(frozen=True)
class GatewaySettings:
    """The pipeline the gateway runs per query, and each stage's deadline."""

    # Candidates retrieval hands on; the reranker reads the first `rerank_candidates` (the
    # blueprint's 40), hubs start from the best `hub_seeds`, selection sees `select_candidates`.
    # Selection sees the whole list: an answer can only keep what it is offered, and on the dev
    # split offering 60 instead of 30 lifted the answer's recall within 8,000 tokens from 0.744 to
    # 0.765 (the ranked list itself, 60 deep: 0.770).
    candidates: int = 60
    rerank_candidates: int = 40
    hub_seeds: int = 15
    select_candidates: int = 60
    # Hub elevation stays off unless the benchmark shows it helps (bench/README.md, "Pipeline").
    hubs: bool = False
    # How long a query waits for the index to catch up with the files before answering from
    # the index as it stands (results of files not yet synced are marked stale); 0 waits for
    # the sync to finish, bounded by `retrieve_timeout_s`.
    freshness_budget_ms: int = 300
    retrieve_timeout_s: float = 30.0
    # The rerank provider's own timeout plus the hop.
    rerank_timeout_s: float = 3.0
    hubs_timeout_s: float = 2.0
    select_timeout_s: float = 5.0
    # Query understanding (issue 9 section 4). The mode applies to every search unless a request
    # names its own.
    semantic_mode: str = "hybrid"
    # Below this composite confidence an answer is `low_confidence` (seed 004 FR-713): search_code's
    # flag and suggested next call, and semantic_search's relevance gate (the min_relevance the
    # gateway sends selection when a call sets none), so both tools judge by one number.
    confidence_threshold: float = 0.5
    # Below this intent confidence the answer carries an escalation hint (FR-727).
    intent_confidence_threshold: float = 0.75
    # Query rewriting (seed 002): an LLM turns a question into code-vocabulary search terms.
    # Enabled by default but inert until an OpenAI-compatible chat endpoint and model are set.
    rewrite_enabled: bool = True
    rewrite_base_url: str | None = None
    rewrite_model: str | None = None
    # The LLM is in the query's hot path: past this the query is searched as given.
    rewrite_timeout_s: float = 3.0
    rewrite_api_key: str | None = field(default=None, repr=False)
    # A rewrite sends the query and the workspace's symbol names: to an endpoint off this
    # machine only when this is set (private by construction, like the providers' gates).
    rewrite_allow_remote: bool = False
    # Remote use of the HTTP server (issue 15 section 5). Bound to anything but loopback it needs a
    # bearer token (the variable, else the file's first line) and checks Host and Origin against
    # these lists (`host:port`, `host:*`; `scheme://host:port`); a loopback bind keeps the SDK's
    # loopback lists and adds these.
    auth_token: str | None = field(default=None, repr=False)
    auth_token_file: Path | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    # Folders under which a tool call may name any `workspace`, besides the server's --workspace
    # folders (and --allow-root).
    allowed_roots: tuple[Path, ...] = ()
    # The workspaces the MCP server serves when no --workspace is given (the first answers calls
    # that name none): a container's command line is fixed in its image, its settings are not.
    workspaces: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Settings:
    state_dir: Path
    log_level: str = "INFO"
    # Where every server of this process listens: loopback unless a deployment (a container, a
    # host serving a team) says otherwise.
    bind_host: str = hosts.LOOPBACK
    analysis_addr: str = "127.0.0.1:50051"
    embedding_addr: str = "127.0.0.1:50052"
    retrieval_addr: str = "127.0.0.1:50053"
    analysis_port: int = 50051
    embedding_port: int = 50052
    retrieval_port: int = 50053
    rerank_addr: str = "127.0.0.1:50054"
    rerank_port: int = 50054
    selection_addr: str = "127.0.0.1:50055"
    selection_port: int = 50055
    # Where the index writer is (IndexWorkspace, Sync, DropIndex) when the retrieval roles run
    # apart; None: the retrieval service at retrieval_addr plays both roles.
    indexer_addr: str | None = None
    shutdown_grace_s: float = 10.0
    rpc_timeout_s: float = 30.0
    startup_timeout_s: float = 120.0
    long_rpc_timeout_s: float = 3600.0
    # The services whose address was configured (<SVC>_ADDR or the file): that address is where
    # clients reach them, whatever the local runtime (runtime.json) records.
    configured_addrs: frozenset[str] = frozenset()
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    selection: SelectionSettings = field(default_factory=SelectionSettings)
    gateway: GatewaySettings = field(default_factory=GatewaySettings)


# --- value parsers: each takes the raw value (str from env, any from YAML) and
# the source name used in error messages.


def _parse_str(value: Any, source: str) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ConfigError(f"{source}: expected a string, got {type(value).__name__}")
    return str(value)


def _parse_optional_str(value: Any, source: str) -> str | None:
    text = _parse_str(value, source).strip()
    return text or None


def _parse_bool(value: Any, source: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{source}: expected true/false, got {value!r}")


def _int_parser(minimum: int, maximum: int | None = None) -> Callable[[Any, str], int]:
    def parse(value: Any, source: str) -> int:
        if isinstance(value, bool):
            raise ConfigError(f"{source}: expected an integer, got {value!r}")
        try:
            number = int(str(value).strip())
        except ValueError:
            raise ConfigError(f"{source}: expected an integer, got {value!r}") from None
        if number < minimum or (maximum is not None and number > maximum):
            bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
            raise ConfigError(f"{source}: must be {bound}, got {number}")
        return number

    return parse


def _optional_int_parser(minimum: int) -> Callable[[Any, str], int | None]:
    parse_int = _int_parser(minimum)

    def parse(value: Any, source: str) -> int | None:
        if value is None or str(value).strip() == "":
            return None
        return parse_int(value, source)

    return parse


def _float_parser(minimum: float, maximum: float | None = None, *, exclusive_min: bool = False):
    def parse(value: Any, source: str) -> float:
        if isinstance(value, bool):
            raise ConfigError(f"{source}: expected a number, got {value!r}")
        try:
            number = float(str(value).strip())
        except ValueError:
            raise ConfigError(f"{source}: expected a number, got {value!r}") from None
        too_low = number <= minimum if exclusive_min else number < minimum
        if math.isnan(number) or too_low or (maximum is not None and number > maximum):
            low = f"> {minimum}" if exclusive_min else f">= {minimum}"
            bound = f"{low} and <= {maximum}" if maximum is not None else low
            raise ConfigError(f"{source}: must be {bound}, got {value!r}")
        return number

    return parse


def _optional_float_parser(minimum: float) -> Callable[[Any, str], float | None]:
    parse_float = _float_parser(minimum)

    def parse(value: Any, source: str) -> float | None:
        if value is None or str(value).strip() == "":
            return None
        return parse_float(value, source)

    return parse


def _choice_parser(choices: tuple[str, ...]) -> Callable[[Any, str], str]:
    def parse(value: Any, source: str) -> str:
        text = _parse_str(value, source).strip().lower()
        if text not in choices:
            raise ConfigError(f"{source}: must be one of {', '.join(choices)}; got {value!r}")
        return text

    return parse


def _parse_addr(value: Any, source: str) -> str:
    text = _parse_str(value, source).strip()
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{source}: expected host:port, got {value!r}")
    return text


def _parse_optional_addr(value: Any, source: str) -> str | None:
    return _parse_addr(value, source) if _parse_str(value, source).strip() else None


def _parse_bind_host(value: Any, source: str) -> str:
    try:
        return hosts.bind_host(_parse_str(value, source))
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _parse_path(value: Any, source: str) -> Path:
    text = _parse_str(value, source).strip()
    if not text:
        raise ConfigError(f"{source}: must not be empty")
    return Path(text).expanduser()


def _parse_state_dir(value: Any, source: str) -> Path:
    # Resolved once, so every process (and `down`, matching its services by it) sees one path.
    path = _parse_path(value, source).resolve()
    try:
        existing = next(p for p in (path, *path.parents) if p.exists())
        is_dir = existing.is_dir()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot use {path} ({exc.strerror})") from None
    if not is_dir:
        where = "" if existing == path else f" ({existing} is a file)"
        raise ConfigError(f"{source}: {path} is not a folder{where}")
    return path


def parse_log_level(value: Any, source: str) -> str:
    name = _parse_str(value, source).strip().upper()
    name = "WARNING" if name == "WARN" else name
    if name not in LOG_LEVELS:
        raise ConfigError(f"{source}: must be one of {', '.join(LOG_LEVELS)}; got {value!r}")
    return name


def _parse_list(value: Any, source: str, separator: str) -> list[str]:
    """A list from YAML, or one string split on `separator` (env); blanks dropped."""
    items = value if isinstance(value, list) else _parse_str(value, source).split(separator)
    return [text for text in (_parse_str(item, source).strip() for item in items) if text]


def _parse_names(value: Any, source: str) -> tuple[str, ...]:
    return tuple(_parse_list(value, source, ","))


def _parse_folders(value: Any, source: str) -> tuple[Path, ...]:
    folders = []
    for text in _parse_list(value, source, os.pathsep):
        path = Path(text).expanduser()
        if not path.is_absolute():
            raise ConfigError(f"{source}: {text!r} is not an absolute path")
        folders.append(path.resolve())
    return tuple(folders)


def _parse_optional_path(value: Any, source: str) -> Path | None:
    return _parse_path(value, source) if _parse_str(value, source).strip() else None


def _parse_storage_options(value: Any, source: str) -> dict[str, str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}: expected a JSON object, {exc.msg}") from None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"{source}: expected a mapping of option name to value")
    return {k: str(v) for k, v in value.items()}


@dataclass(frozen=True)
class _Field:
    """One setting: where it lives in Settings, its env var, its YAML key."""

    target: str  # "state_dir" or "embedding.profile"
    env: str
    yaml_key: str | None  # None: env only (secrets)
    parse: Callable[[Any, str], Any]
    doc: str


_FIELDS: tuple[_Field, ...] = (
    _Field("state_dir", "CODECOMPASS_STATE_DIR", "state_dir", _parse_state_dir,
           "Runtime state: addresses, pids, logs, indexes (default: one folder per user and checkout, "
           "$XDG_STATE_HOME/codecompass/<checkout>-<hash>, XDG_STATE_HOME defaulting to ~/.local/state)"),
    _Field("log_level", "LOG_LEVEL", None, parse_log_level,
           f"Log level of every service: {', '.join(LOG_LEVELS)} (WARN is WARNING)"),
    _Field("bind_host", BIND_HOST_ENV, "bind_host", _parse_bind_host,
           "Address every server listens on: 127.0.0.1 (this machine only), 0.0.0.0 or :: (every interface, "
           "as in a container), or one interface's address or host name"),
    *(_Field(f"{service}_addr", names.addr_env(service), f"{service}_addr", _parse_addr,
             f"Address clients use for the {service} service") for service in names.BACKENDS),
    *(_Field(f"{service}_port", names.port_env(service), f"{service}_port", _int_parser(0, 65535),
             f"Port the {service} service listens on (0 = any free port)") for service in names.BACKENDS),
    _Field("indexer_addr", names.addr_env(names.INDEXER), "indexer_addr", _parse_optional_addr,
           "Address of the index writer (sync, index, drop) when the retrieval roles run apart; "
           "default: the retrieval service, which plays both"),
    _Field("shutdown_grace_s", "CODECOMPASS_SHUTDOWN_GRACE_S", "shutdown_grace_s", _float_parser(0.0),
           "Seconds a stopping server lets in-flight RPCs finish"),
    _Field("rpc_timeout_s", "CODECOMPASS_RPC_TIMEOUT_S", "rpc_timeout_s",
           _float_parser(0.0, exclusive_min=True), "Deadline of unary outbound RPCs"),
    _Field("startup_timeout_s", "CODECOMPASS_STARTUP_TIMEOUT_S", "startup_timeout_s",
           _float_parser(0.0, exclusive_min=True),
           "How long `codecompass up` waits for each service to become SERVING"),
    _Field("long_rpc_timeout_s", "CODECOMPASS_LONG_RPC_TIMEOUT_S", "long_rpc_timeout_s",
           _float_parser(0.0, exclusive_min=True),
           "Deadline of long RPCs: chunking a folder, indexing, a search that syncs a cold index"),
    _Field("embedding.profile", "CODECOMPASS_EMBEDDING_PROFILE", "embedding.profile",
           _choice_parser(EMBEDDING_PROFILES),
           "minilm | e5-small | code-static | code-small | voyage | openai-compatible"),
    _Field("embedding.external_provider_enabled", "CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED",
           "embedding.external_provider_enabled", _parse_bool,
           "Privacy gate 1: allow an external embedding provider at all"),
    _Field("embedding.allow_code_payload_to_external",
           "CODECOMPASS_EMBEDDING_ALLOW_CODE_PAYLOAD_TO_EXTERNAL",
           "embedding.allow_code_payload_to_external", _parse_bool,
           "Privacy gate 2: allow sending source code to it"),
    _Field("embedding.api_key", API_KEY_ENV, None, _parse_optional_str,
           "API key of the external provider (env only; never read from files, never logged)"),
    _Field("embedding.base_url", "CODECOMPASS_EMBEDDING_BASE_URL", "embedding.base_url",
           _parse_optional_str, "Endpoint of the external provider"),
    _Field("embedding.model", "CODECOMPASS_EMBEDDING_MODEL", "embedding.model", _parse_optional_str,
           "Model name for the external provider, the model2vec folder of code-static or the ONNX folder of "
           "code-small (profile default when unset)"),
    _Field("embedding.dimensions", "CODECOMPASS_EMBEDDING_DIMENSIONS", "embedding.dimensions",
           _optional_int_parser(1), "Requested output dimensions (provider default when unset)"),
    _Field("embedding.timeout_s", "CODECOMPASS_EMBEDDING_TIMEOUT_S", "embedding.timeout_s",
           _float_parser(0.0, exclusive_min=True), "Timeout of one external provider request"),
    _Field("embedding.max_retries", "CODECOMPASS_EMBEDDING_MAX_RETRIES", "embedding.max_retries",
           _int_parser(0, 20), "Retries of a failed external provider request"),
    _Field("embedding.batch_size", "CODECOMPASS_EMBEDDING_BATCH_SIZE", "embedding.batch_size",
           _int_parser(1, 4096), "Texts per model batch"),
    _Field("embedding.max_tokens", "CODECOMPASS_EMBEDDING_MAX_TOKENS", "embedding.max_tokens",
           _int_parser(8, 32768), "Token window per text (longer texts are truncated)"),
    _Field("retrieval.role", "CODECOMPASS_RETRIEVAL_ROLE", "retrieval.role", _choice_parser(RETRIEVAL_ROLES),
           "all | writer | searcher: the roles this retrieval process serves (one writer per index, any searchers)"),
    _Field("retrieval.db_uri", "CODECOMPASS_RETRIEVAL_DB_URI", "retrieval.db_uri", _parse_optional_str,
           "Index root (local dir or s3://bucket/prefix): each index lives at <root>/<key>; default <state_dir>/index"),
    _Field("retrieval.storage_options", "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS",
           "retrieval.storage_options", _parse_storage_options,
           "LanceDB object-store options (JSON object in env); values never printed"),
    _Field("retrieval.semantic_ratio", "CODECOMPASS_RETRIEVAL_SEMANTIC_RATIO",
           "retrieval.semantic_ratio", _float_parser(0.0, 1.0), "Maximum semantic weight of hybrid search"),
    _Field("retrieval.default_limit", "CODECOMPASS_RETRIEVAL_DEFAULT_LIMIT", "retrieval.default_limit",
           _int_parser(1, 1000), "Results returned when a search sets no limit"),
    _Field("retrieval.candidate_pool", "CODECOMPASS_RETRIEVAL_CANDIDATE_POOL",
           "retrieval.candidate_pool", _int_parser(1, 1000),
           "Candidates each search channel contributes before ranking"),
    _Field("retrieval.compact_every_n_syncs", "CODECOMPASS_RETRIEVAL_COMPACT_EVERY_N_SYNCS",
           "retrieval.compact_every_n_syncs", _int_parser(1), "Compact the table and drop old versions every N syncs"),
    _Field("retrieval.large_index_files", "CODECOMPASS_RETRIEVAL_LARGE_INDEX_FILES", "retrieval.large_index_files",
           _int_parser(1, 10_000_000), "Source files above which a workspace's first index needs --force"),
    _Field("retrieval.large_index_mb", "CODECOMPASS_RETRIEVAL_LARGE_INDEX_MB", "retrieval.large_index_mb",
           _int_parser(1, 1_000_000), "Megabytes of source above which a workspace's first index needs --force"),
    _Field("retrieval.static_channel", "CODECOMPASS_RETRIEVAL_STATIC_CHANNEL", "retrieval.static_channel",
           _parse_bool, "Write static (code-static) vectors with every chunk, a semantic channel from the first sync"),
    _Field("retrieval.static_model_dir", "CODECOMPASS_RETRIEVAL_STATIC_MODEL_DIR", "retrieval.static_model_dir",
           _parse_optional_path, "The static channel's model2vec folder (default: the committed code-static model)"),
    _Field("retrieval.learned_ranking", "CODECOMPASS_RETRIEVAL_LEARNED_RANKING", "retrieval.learned_ranking",
           _parse_bool, "Order results with the learned ranker (off: the hand-set ranking stack alone)"),
    _Field("retrieval.ranker_model", "CODECOMPASS_RETRIEVAL_RANKER_MODEL", "retrieval.ranker_model",
           _parse_optional_path,
           "The learned ranker's LightGBM model file (default: the committed models/ranker/model.txt)"),
    _Field("retrieval.searcher_refresh_s", "CODECOMPASS_RETRIEVAL_SEARCHER_REFRESH_S",
           "retrieval.searcher_refresh_s", _optional_float_parser(0.0),
           "Seconds between a searcher's checks for a newer index version (default 0 local, 1 on an object store)"),
    _Field("retrieval.searcher_cache", "CODECOMPASS_RETRIEVAL_SEARCHER_CACHE", "retrieval.searcher_cache", _parse_bool,
           "A searcher reads a local copy of an index on S3, refreshed every searcher_refresh_s "
           "(off: reads the bucket)"),
    _Field("retrieval.shard_runner", "CODECOMPASS_RETRIEVAL_SHARD_RUNNER", "retrieval.shard_runner",
           _choice_parser(SHARD_RUNNERS),
           "processes | job: who runs a sharded index's workers (job: the writer posts the plan in the index "
           "and waits for an Indexed Job's pods)"),
    _Field("rerank.provider", "CODECOMPASS_RERANK_PROVIDER", "rerank.provider", _choice_parser(RERANK_PROVIDERS),
           "local | voyage | cohere | llm (local keeps the first-stage scores)"),
    _Field("rerank.external_provider_enabled", "CODECOMPASS_RERANK_EXTERNAL_PROVIDER_ENABLED",
           "rerank.external_provider_enabled", _parse_bool,
           "Privacy gate 1: allow an external rerank provider at all"),
    _Field("rerank.allow_code_payload_to_external", "CODECOMPASS_RERANK_ALLOW_CODE_PAYLOAD_TO_EXTERNAL",
           "rerank.allow_code_payload_to_external", _parse_bool,
           "Privacy gate 2: allow sending source code to it"),
    _Field("rerank.api_key", RERANK_API_KEY_ENV, None, _parse_optional_str,
           "API key of the rerank provider (env only; never read from files, never logged)"),
    _Field("rerank.base_url", "CODECOMPASS_RERANK_BASE_URL", "rerank.base_url", _parse_optional_str,
           "Endpoint of the rerank provider (required for llm: an OpenAI-compatible /v1 base)"),
    _Field("rerank.model", "CODECOMPASS_RERANK_MODEL", "rerank.model", _parse_optional_str,
           "Model of the rerank provider (rerank-2.5 / rerank-v3.5 by default; required for llm)"),
    _Field("rerank.weight", "CODECOMPASS_RERANK_WEIGHT", "rerank.weight", _float_parser(0.0, 1.0),
           "Share of the final score the gateway takes from the reranker's score"),
    _Field("rerank.timeout_s", "CODECOMPASS_RERANK_TIMEOUT_S", "rerank.timeout_s",
           _float_parser(0.0, exclusive_min=True), "Timeout of one rerank provider request"),
    _Field("gateway.hubs", "CODECOMPASS_GATEWAY_HUBS", "gateway.hubs", _parse_bool,
           "Run the structure stage (hub elevation) by default"),
    _Field("gateway.candidates", "CODECOMPASS_GATEWAY_CANDIDATES", "gateway.candidates", _int_parser(1, 500),
           "Candidates retrieval hands to the later stages"),
    _Field("gateway.freshness_budget_ms", "CODECOMPASS_GATEWAY_FRESHNESS_BUDGET_MS", "gateway.freshness_budget_ms",
           _int_parser(0, 600_000), "Milliseconds a query waits for the index to sync before answering "
           "from it as it stands (0: until the sync is done)"),
    _Field("gateway.retrieve_timeout_s", "CODECOMPASS_GATEWAY_RETRIEVE_TIMEOUT_S", "gateway.retrieve_timeout_s",
           _float_parser(0.0, exclusive_min=True), "Deadline of the retrieve stage"),
    _Field("gateway.rerank_timeout_s", "CODECOMPASS_GATEWAY_RERANK_TIMEOUT_S", "gateway.rerank_timeout_s",
           _float_parser(0.0, exclusive_min=True),
           "Deadline of the rerank stage; past it the first-stage order stands"),
    _Field("gateway.hubs_timeout_s", "CODECOMPASS_GATEWAY_HUBS_TIMEOUT_S", "gateway.hubs_timeout_s",
           _float_parser(0.0, exclusive_min=True), "Deadline of the structure stage; past it no hubs are added"),
    _Field("gateway.select_timeout_s", "CODECOMPASS_GATEWAY_SELECT_TIMEOUT_S", "gateway.select_timeout_s",
           _float_parser(0.0, exclusive_min=True), "Deadline of the selection stage; past it the ranked list answers"),
    _Field("gateway.semantic_mode", "CODECOMPASS_GATEWAY_SEMANTIC_MODE", "gateway.semantic_mode",
           _choice_parser(SEMANTIC_MODES), "off (lexical only, no embedding call) | rerank_only (no vectors; a "
           "model reranker may run) | hybrid (lexical + vectors)"),
    _Field("gateway.confidence_threshold", "CODECOMPASS_GATEWAY_CONFIDENCE_THRESHOLD",
           "gateway.confidence_threshold", _float_parser(0.0, 1.0),
           "Composite confidence below which an answer is low_confidence: search_code's flag and suggested action, "
           "semantic_search's relevance gate when a call sets no min_relevance"),
    _Field("gateway.intent_confidence_threshold", "CODECOMPASS_GATEWAY_INTENT_CONFIDENCE_THRESHOLD",
           "gateway.intent_confidence_threshold", _float_parser(0.0, 1.0),
           "Intent confidence below which search_code adds an intent escalation hint"),
    _Field("gateway.rewrite_enabled", "CODECOMPASS_GATEWAY_REWRITE_ENABLED", "gateway.rewrite_enabled", _parse_bool,
           "Rewrite question-like and zero-result queries with an LLM (needs rewrite base_url and model)"),
    _Field("gateway.rewrite_base_url", "CODECOMPASS_GATEWAY_REWRITE_BASE_URL", "gateway.rewrite_base_url",
           _parse_optional_str, "OpenAI-compatible /v1 base of the query-rewriting LLM (Ollama, vLLM, …)"),
    _Field("gateway.rewrite_model", "CODECOMPASS_GATEWAY_REWRITE_MODEL", "gateway.rewrite_model",
           _parse_optional_str, "Model of the query-rewriting LLM"),
    _Field("gateway.rewrite_timeout_s", "CODECOMPASS_GATEWAY_REWRITE_TIMEOUT_S", "gateway.rewrite_timeout_s",
           _float_parser(0.0, exclusive_min=True), "Timeout of one rewrite request; past it the query is "
           "searched as given"),
    _Field("gateway.rewrite_api_key", REWRITE_API_KEY_ENV, None, _parse_optional_str,
           "API key of the query-rewriting LLM (env only; never read from files, never logged)"),
    _Field("gateway.rewrite_allow_remote", "CODECOMPASS_GATEWAY_REWRITE_ALLOW_REMOTE",
           "gateway.rewrite_allow_remote", _parse_bool,
           "Allow a rewrite endpoint off this machine (it receives queries and symbol names); loopback needs "
           "no permission"),
    _Field("gateway.auth_token", GATEWAY_AUTH_TOKEN_ENV, None, _parse_optional_str,
           "Bearer token the MCP HTTP server requires, needed when it listens on anything but loopback (env only; "
           "never read from the config file, never logged)"),
    _Field("gateway.auth_token_file", "CODECOMPASS_GATEWAY_AUTH_TOKEN_FILE", "gateway.auth_token_file",
           _parse_optional_path, "File whose first line is that token (when the variable is not set)"),
    _Field("gateway.allowed_hosts", "CODECOMPASS_GATEWAY_ALLOWED_HOSTS", "gateway.allowed_hosts", _parse_names,
           "Host headers the MCP HTTP server accepts besides its own address (host:port or host:*; comma-separated "
           "in env)"),
    _Field("gateway.allowed_origins", "CODECOMPASS_GATEWAY_ALLOWED_ORIGINS", "gateway.allowed_origins",
           _parse_names, "Origin headers the MCP HTTP server accepts (scheme://host:port or scheme://host:*); a "
           "request with any other Origin is refused (403)"),
    _Field("gateway.allowed_roots", "CODECOMPASS_GATEWAY_ALLOWED_ROOTS", "gateway.allowed_roots", _parse_folders,
           f"Folders under which an MCP call may name its own workspace, besides the server's --workspace folders "
           f"('{os.pathsep}'-separated in env)"),
    _Field("gateway.workspaces", "CODECOMPASS_GATEWAY_WORKSPACES", "gateway.workspaces", _parse_folders,
           f"Workspaces the MCP server serves when started without --workspace, the first by default "
           f"('{os.pathsep}'-separated in env)"),
    _Field("selection.max_tokens", "CODECOMPASS_SELECTION_MAX_TOKENS", "selection.max_tokens",
           _int_parser(256, 1_000_000), "Token budget of an answer when the request sets none"),
    _Field("selection.min_relevance", "CODECOMPASS_SELECTION_MIN_RELEVANCE", "selection.min_relevance",
           _float_parser(0.0, 1.0), "Relevance gate of an answer when the request sets none (the gateway always "
           "sets one: gateway.confidence_threshold)"),
    _Field("selection.merge_max_tokens", "CODECOMPASS_SELECTION_MERGE_MAX_TOKENS", "selection.merge_max_tokens",
           _int_parser(0, 1_000_000), "Largest result a parent merged with its matching children may be"),
    _Field("selection.render_timeout_s", "CODECOMPASS_SELECTION_RENDER_TIMEOUT_S", "selection.render_timeout_s",
           _float_parser(0.0, exclusive_min=True), "Deadline of rendering; past it the stored source answers"),
)

_YAML_KEYS = {f.yaml_key: f for f in _FIELDS if f.yaml_key is not None}
# Settings that were removed because the policy they set has one home now (issue 17): named, so a
# setup that still sets one fails at start saying where the value lives, instead of losing it in
# silence. {(env variable, config key): why}
_REMOVED = {
    **{(f"CODECOMPASS_GATEWAY_SEMANTIC_RATIO_{intent.upper()}", f"gateway.semantic_ratio_overrides.{intent}"):
       "the ranking policy sets the semantic ratio per intent (RankingPolicy's *_share in "
       "codecompass/policy/ranking.py); a request's semantic_ratio still caps it"
       for intent in ("symbol", "path", "error", "natural_language")},
    ("CODECOMPASS_SELECTION_FOCUS_MULTIPLIER", "selection.focus_multiplier"):
        "the relevance policy sets the focus multiplier (RelevancePolicy in codecompass/policy/relevance.py)",
}
_SECRET_YAML_KEYS = {"embedding.api_key": API_KEY_ENV, "rerank.api_key": RERANK_API_KEY_ENV,
                     "gateway.rewrite_api_key": REWRITE_API_KEY_ENV, "gateway.auth_token": GATEWAY_AUTH_TOKEN_ENV}


def default_config_path(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME", str(Path.home()))) / ".config" / "codecompass" / "config.yaml"


def _default_state_dir(env: Mapping[str, str]) -> Path:
    # Per checkout as well as per user: two checkouts sharing one folder would each drive the
    # other's services. The folder name keeps the checkout's name readable; the hash tells
    # two checkouts of the same name apart.
    xdg = Path(env.get("XDG_STATE_HOME") or "relative")
    # The XDG spec says a relative XDG_STATE_HOME is invalid and to be ignored.
    base = xdg if xdg.is_absolute() else Path(env.get("HOME", str(Path.home()))) / ".local" / "state"
    digest = hashlib.sha256(str(CHECKOUT_ROOT).encode("utf-8")).hexdigest()[:8]
    return (base / "codecompass" / f"{CHECKOUT_ROOT.name}-{digest}").resolve()


_SECTIONS = frozenset(key.rpartition(".")[0] for key in _YAML_KEYS if "." in key)


def _flatten(data: Mapping[str, Any], path: Path, prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        # storage_options is itself a mapping value, not a section to descend into.
        if isinstance(value, Mapping) and dotted not in _YAML_KEYS:
            flat.update(_flatten(value, path, f"{dotted}."))
        elif dotted in _SECTIONS:
            if value is None:  # an empty section, e.g. `embedding:` with its settings commented out
                continue
            raise ConfigError(f"config file {path}: {dotted} must be a mapping of settings, "
                              f"got {_yaml_type(value)}")
        else:
            flat[dotted] = value
    return flat


_YAML_TYPES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list"}


def _yaml_type(value: Any) -> str:
    return _YAML_TYPES.get(type(value), f"a {type(value).__name__}")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a YAML error (its str() spans several lines and quotes the file)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}"
    if isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.character, int):
        return f"{exc.reason} (U+{exc.character:04X} at offset {exc.position})"
    return " ".join(str(exc).split())


def read_config_file(path: Path) -> dict[str, Any]:
    """Flattened ``{"embedding.profile": value}`` view of a YAML settings file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
                          f"at offset {exc.start}); expected YAML") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path}: invalid YAML: {_yaml_problem(exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"config file {path}: top level must be a mapping of settings, got {_yaml_type(data)}")
    flat = _flatten(data, path)
    for key in flat:
        if key in _SECRET_YAML_KEYS:
            raise ConfigError(
                f"config file {path}: {key} is not read from files; set {_SECRET_YAML_KEYS[key]} instead"
            )
        removed = next((why for (_, yaml_key), why in _REMOVED.items() if yaml_key == key), None)
        if removed is not None:
            raise ConfigError(f"config file {path}: {key} was removed: {removed}")
        if key not in _YAML_KEYS:
            raise ConfigError(f"config file {path}: unknown key {key!r}")
    return flat


def settings_from(env: Mapping[str, str], file_values: Mapping[str, Any] | None = None) -> Settings:
    """Build Settings from an environment and a flattened config file (pure; tests use it)."""
    file_values = file_values or {}
    for (variable, _), why in _REMOVED.items():
        if variable in env:
            raise ConfigError(f"{variable} was removed: {why}")
    top: dict[str, Any] = {"state_dir": _default_state_dir(env)}
    sections: dict[str, dict[str, Any]] = {"embedding": {}, "retrieval": {}, "rerank": {}, "selection": {},
                                           "gateway": {}}
    for spec in _FIELDS:
        if spec.env in env:
            value = spec.parse(env[spec.env], spec.env)
        elif spec.yaml_key is not None and spec.yaml_key in file_values:
            value = spec.parse(file_values[spec.yaml_key], f"config key {spec.yaml_key}")
        else:
            continue
        section, _, name = spec.target.rpartition(".")
        (sections[section] if section else top)[name] = value
    top["configured_addrs"] = frozenset(service for service in names.BACKENDS if f"{service}_addr" in top)
    embedding = EmbeddingSettings(**sections["embedding"])
    retrieval = RetrievalSettings(**sections["retrieval"])
    if embedding.profile == "openai-compatible" and embedding.external_allowed and not embedding.base_url:
        raise ConfigError(
            "CODECOMPASS_EMBEDDING_BASE_URL: required when CODECOMPASS_EMBEDDING_PROFILE=openai-compatible"
        )
    rerank = RerankSettings(**sections["rerank"])
    return Settings(**top, embedding=embedding, retrieval=retrieval, rerank=rerank,
                    selection=SelectionSettings(**sections["selection"]),
                    gateway=GatewaySettings(**sections["gateway"]))


def load_settings_from_environ(env: Mapping[str, str]) -> Settings:
    explicit = env.get("CODECOMPASS_CONFIG")
    if explicit:
        path = Path(explicit).expanduser()
        if not _exists(path):
            raise ConfigError(f"CODECOMPASS_CONFIG: no such file {path}")
        return settings_from(env, read_config_file(path))
    path = default_config_path(env)
    return settings_from(env, read_config_file(path) if _exists(path) else None)


def _exists(path: Path) -> bool:
    # A path that cannot even be looked at counts as there, so reading it names the real problem.
    try:
        return path.exists()
    except OSError:
        return True


@functools.cache
def load_settings() -> Settings:
    """Settings of this process, parsed once from os.environ and the settings file."""
    return load_settings_from_environ(os.environ)


def redacted(settings: Settings) -> dict[str, Any]:
    """JSON-ready dump safe to print or log: no API key, no storage option values."""
    data = asdict(settings)
    data["state_dir"] = str(settings.state_dir)
    data["configured_addrs"] = sorted(settings.configured_addrs)
    data["embedding"]["api_key"] = _REDACTED if settings.embedding.api_key else None
    data["retrieval"]["storage_options"] = {k: _REDACTED for k in settings.retrieval.storage_options}
    data["rerank"]["api_key"] = _REDACTED if settings.rerank.api_key else None
    data["gateway"]["rewrite_api_key"] = _REDACTED if settings.gateway.rewrite_api_key else None
    data["gateway"]["auth_token"] = _REDACTED if settings.gateway.auth_token else None
    gateway = settings.gateway
    data["gateway"]["auth_token_file"] = str(gateway.auth_token_file) if gateway.auth_token_file else None
    data["gateway"]["allowed_roots"] = [str(root) for root in gateway.allowed_roots]
    data["gateway"]["workspaces"] = [str(folder) for folder in gateway.workspaces]
    return data


def documented_settings() -> list[tuple[str, str | None, str]]:
    """(env var, YAML key, description) of every setting, for docs and `codecompass config`."""
    return [(f.env, f.yaml_key, f.doc) for f in _FIELDS]
