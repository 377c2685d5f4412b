"""The settings objects: one frozen dataclass per service, the values a setting may take, the
error a bad value raises, and the dump of a Settings that is safe to print.

What each field means and why its default is what it is lives here, beside the field; where a
setting comes from (its env var, its config key, its parser) is `fields.FIELDS`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codecompass.common import hosts

EMBEDDING_PROFILES = ("minilm", "e5-small", "code-static", "code-small", "voyage", "openai-compatible")
RERANK_PROVIDERS = ("local", "voyage", "cohere", "llm")
# Roles of a retrieval process (retrieval/engine.py): both, the index writer alone, a searcher alone.
RETRIEVAL_ROLES = ("all", "writer", "searcher")
# Who runs the workers of a sharded index (retrieval/index/shard/): the writer, as local processes,
# or someone else (the pods of a Kubernetes Indexed Job) that finds the plan in the index.
SHARD_RUNNERS = ("processes", "job")
# Seed 004: `off` never calls the embedding service (nor a model reranker), `rerank_only` builds
# no vectors but may rerank with a model, `hybrid` blends lexical and vector search.
SEMANTIC_MODES = ("off", "rerank_only", "hybrid")
# Only the levels every service accepts: the Node analysis service knows no CRITICAL, and a
# level that passes `codecompass config` must not stop `up` later.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
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
    # Bases shared by the checkouts of a repository (retrieval/index/layers.py): a clean checkout's
    # index is copied into a base, and a new worktree's index starts from it, costing its diff.
    # Off: every checkout's index is built from its files (each checkout has its own either way).
    checkout_bases: bool = True
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

    @property
    def needs_service(self) -> bool:
        """Whether any query can use the rerank service: a model reranker is the default, or the
        gates let a query ask for one. Otherwise every provider but the local one (the ranking
        retrieval already applied) answers "blocked" without a call, and the local one needs none."""
        return self.provider != "local" or self.external_allowed


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
    # Streamable HTTP without sessions: a handshake-era client's session (Mcp-Session-Id) lives in
    # the process that answered its `initialize`, so behind a Service balancing over several
    # gateway pods its next request, on another pod, would be refused (404). Stateless, every
    # request is served on its own by whichever process gets it. The cost: no server-to-client
    # requests, so no query rewriting by the client's own model (sampling); 2026-07-28 clients
    # have no sessions either way.
    stateless_http: bool = False
    # Folders under which a tool call may name any `workspace`, besides the server's --workspace
    # folders (and --allow-root).
    allowed_roots: tuple[Path, ...] = ()
    # The workspaces the MCP server serves when no --workspace is given (the first answers calls
    # that name none): a container's command line is fixed in its image, its settings are not.
    workspaces: tuple[Path, ...] = ()


@dataclass(frozen=True)
class GrpcSettings:
    """Who may call the gRPC services and over what: the service token and TLS (common/transport.py).

    The same section serves both ends, so one deployment's settings make its servers and its
    clients (service to service, the gateway, the CLI) agree."""

    # The service token: a server bound beyond loopback requires one (the variable, else the file's
    # first line) on every call but health's; on loopback it is optional, and enforced when set.
    # Clients send the current one (the file's first line, read again when it changes).
    auth_token: str | None = field(default=None, repr=False)
    auth_token_file: Path | None = None
    # TLS of a server: its certificate chain and key (PEM). With a client CA, a client must present a
    # certificate it signed (mTLS).
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    # TLS of a client: the CA that signed the servers' certificates (set: clients dial TLS), the
    # certificate and key it presents to a server that asks (mTLS), and the name it expects in the
    # servers' certificates when that is not the host it dials.
    tls_ca_file: Path | None = None
    tls_client_cert_file: Path | None = None
    tls_client_key_file: Path | None = None
    tls_server_name: str | None = None


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
    writer_addr: str | None = None
    # gRPC server reflection on every service (ServiceSpec.reflection, the Node service's own).
    grpc_reflection: bool = True
    # The port each process serves its metrics on for Prometheus (`<SVC>_METRICS_PORT`); None:
    # none, the default, as several services share one machine locally. A container sets 9464 (the
    # port registered for OpenTelemetry's Prometheus exporters), each pod having its own.
    analysis_metrics_port: int | None = None
    embedding_metrics_port: int | None = None
    retrieval_metrics_port: int | None = None
    rerank_metrics_port: int | None = None
    selection_metrics_port: int | None = None
    gateway_metrics_port: int | None = None
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
    grpc: GrpcSettings = field(default_factory=GrpcSettings)

    def metrics_port(self, service: str) -> int | None:
        """The Prometheus port of ``service`` (a name of codecompass.common.names); None: none."""
        port: int | None = getattr(self, f"{service}_metrics_port")
        return port


# Beside the dataclasses it reads: a new secret field (repr=False above) needs its line here too.
def redacted(settings: Settings) -> dict[str, Any]:
    """JSON-ready dump safe to print or log: no API key, no token, no storage option values."""
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
    data["grpc"] = {key: str(value) if isinstance(value, Path) else value
                    for key, value in data["grpc"].items()}
    data["grpc"]["auth_token"] = _REDACTED if settings.grpc.auth_token else None
    return data
