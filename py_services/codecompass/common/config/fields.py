"""Every setting, declared once: where it lives in Settings, its env var, its config key, its
parser and its one-line description, so parsing, validation, error messages and the
documentation table (`documented_settings`) cannot drift apart.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from codecompass.common import names
from codecompass.common.config.parsers import (
    choice_parser,
    float_parser,
    int_parser,
    optional_float_parser,
    optional_int_parser,
    parse_addr,
    parse_bind_host,
    parse_bool,
    parse_folders,
    parse_log_level,
    parse_names,
    parse_optional_addr,
    parse_optional_path,
    parse_optional_str,
    parse_state_dir,
    parse_storage_options,
)
from codecompass.common.config.settings import (
    EMBEDDING_PROFILES,
    LOG_LEVELS,
    RERANK_PROVIDERS,
    RETRIEVAL_ROLES,
    SEMANTIC_MODES,
    SHARD_RUNNERS,
)

# Variables named in code elsewhere (secrets, which no config file may hold; the bind host).
API_KEY_ENV = "CODECOMPASS_EMBEDDING_API_KEY"
RERANK_API_KEY_ENV = "CODECOMPASS_RERANK_API_KEY"
REWRITE_API_KEY_ENV = "CODECOMPASS_REWRITE_API_KEY"
GATEWAY_AUTH_TOKEN_ENV = "CODECOMPASS_GATEWAY_AUTH_TOKEN"
GRPC_AUTH_TOKEN_ENV = "CODECOMPASS_GRPC_AUTH_TOKEN"
GRPC_AUTH_TOKEN_FILE_ENV = "CODECOMPASS_GRPC_AUTH_TOKEN_FILE"
BIND_HOST_ENV = "CODECOMPASS_BIND_HOST"
# Read by the Node service from its environment too (`codecompass up` passes the setting on).
GRPC_REFLECTION_ENV = "CODECOMPASS_GRPC_REFLECTION"


@dataclass(frozen=True)
class Field:
    """One setting: where it lives in Settings, its env var, its YAML key."""

    target: str  # "state_dir" or "embedding.profile"
    env: str
    yaml_key: str | None  # None: env only (secrets)
    parse: Callable[[Any, str], Any]
    doc: str


FIELDS: tuple[Field, ...] = (
    Field("state_dir", "CODECOMPASS_STATE_DIR", "state_dir", parse_state_dir,
          "Runtime state: addresses, pids, logs, indexes (default: one folder per user and checkout, "
          "$XDG_STATE_HOME/codecompass/<checkout>-<hash>, XDG_STATE_HOME defaulting to ~/.local/state)"),
    Field("log_level", "LOG_LEVEL", None, parse_log_level,
          f"Log level of every service: {', '.join(LOG_LEVELS)} (WARN is WARNING)"),
    Field("bind_host", BIND_HOST_ENV, "bind_host", parse_bind_host,
          "Address every server listens on: 127.0.0.1 (this machine only), 0.0.0.0 or :: (every interface, "
          "as in a container), or one interface's address or host name"),
    *(Field(f"{service}_addr", names.addr_env(service), f"{service}_addr", parse_addr,
            f"Address clients use for the {service} service") for service in names.BACKENDS),
    *(Field(f"{service}_port", names.port_env(service), f"{service}_port", int_parser(0, 65535),
            f"Port the {service} service listens on (0 = any free port)") for service in names.BACKENDS),
    *(Field(f"{service}_metrics_port", names.metrics_port_env(service), f"{service}_metrics_port",
            optional_int_parser(0, 65535),
            f"Port the {service} service serves its metrics on for Prometheus (default: none; 0 = any free port)")
      for service in (*names.BACKENDS, names.GATEWAY)),
    Field("writer_addr", names.addr_env(names.WRITER), "writer_addr", parse_optional_addr,
          "Address of the index writer (sync, index, drop) when the retrieval roles run apart; "
          "default: the retrieval service, which plays both"),
    Field("grpc_reflection", GRPC_REFLECTION_ENV, "grpc_reflection", parse_bool,
          "gRPC server reflection on every service (grpcurl, grpcui and Postman list and call the RPCs "
          "without the protos); false turns it off"),
    Field("shutdown_grace_s", "CODECOMPASS_SHUTDOWN_GRACE_S", "shutdown_grace_s", float_parser(0.0),
          "Seconds a stopping server lets in-flight RPCs finish"),
    Field("rpc_timeout_s", "CODECOMPASS_RPC_TIMEOUT_S", "rpc_timeout_s",
          float_parser(0.0, exclusive_min=True), "Deadline of unary outbound RPCs"),
    Field("startup_timeout_s", "CODECOMPASS_STARTUP_TIMEOUT_S", "startup_timeout_s",
          float_parser(0.0, exclusive_min=True),
          "How long `codecompass up` waits for each service to become SERVING"),
    Field("long_rpc_timeout_s", "CODECOMPASS_LONG_RPC_TIMEOUT_S", "long_rpc_timeout_s",
          float_parser(0.0, exclusive_min=True),
          "Deadline of long RPCs: chunking a folder, indexing, a search that syncs a cold index"),
    Field("embedding.profile", "CODECOMPASS_EMBEDDING_PROFILE", "embedding.profile",
          choice_parser(EMBEDDING_PROFILES),
          "minilm | e5-small | code-static | code-small | voyage | openai-compatible"),
    Field("embedding.external_provider_enabled", "CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED",
          "embedding.external_provider_enabled", parse_bool,
          "Privacy gate 1: allow an external embedding provider at all"),
    Field("embedding.allow_code_payload_to_external",
          "CODECOMPASS_EMBEDDING_ALLOW_CODE_PAYLOAD_TO_EXTERNAL",
          "embedding.allow_code_payload_to_external", parse_bool,
          "Privacy gate 2: allow sending source code to it"),
    Field("embedding.api_key", API_KEY_ENV, None, parse_optional_str,
          "API key of the external provider (env only; never read from files, never logged)"),
    Field("embedding.base_url", "CODECOMPASS_EMBEDDING_BASE_URL", "embedding.base_url",
          parse_optional_str, "Endpoint of the external provider"),
    Field("embedding.model", "CODECOMPASS_EMBEDDING_MODEL", "embedding.model", parse_optional_str,
          "Model name for the external provider, the model2vec folder of code-static or the ONNX folder of "
          "code-small (profile default when unset)"),
    Field("embedding.dimensions", "CODECOMPASS_EMBEDDING_DIMENSIONS", "embedding.dimensions",
          optional_int_parser(1), "Requested output dimensions (provider default when unset)"),
    Field("embedding.timeout_s", "CODECOMPASS_EMBEDDING_TIMEOUT_S", "embedding.timeout_s",
          float_parser(0.0, exclusive_min=True), "Timeout of one external provider request"),
    Field("embedding.max_retries", "CODECOMPASS_EMBEDDING_MAX_RETRIES", "embedding.max_retries",
          int_parser(0, 20), "Retries of a failed external provider request"),
    Field("embedding.batch_size", "CODECOMPASS_EMBEDDING_BATCH_SIZE", "embedding.batch_size",
          int_parser(1, 4096), "Texts per model batch"),
    Field("embedding.max_tokens", "CODECOMPASS_EMBEDDING_MAX_TOKENS", "embedding.max_tokens",
          int_parser(8, 32768), "Token window per text (longer texts are truncated)"),
    Field("retrieval.role", "CODECOMPASS_RETRIEVAL_ROLE", "retrieval.role", choice_parser(RETRIEVAL_ROLES),
          "all | writer | searcher: the roles this retrieval process serves (one writer per index, any searchers)"),
    Field("retrieval.db_uri", "CODECOMPASS_RETRIEVAL_DB_URI", "retrieval.db_uri", parse_optional_str,
          "Index root (local dir or s3://bucket/prefix): each index lives at <root>/<key>; default <state_dir>/index"),
    Field("retrieval.storage_options", "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS",
          "retrieval.storage_options", parse_storage_options,
          "LanceDB object-store options (JSON object in env); values never printed"),
    Field("retrieval.semantic_ratio", "CODECOMPASS_RETRIEVAL_SEMANTIC_RATIO",
          "retrieval.semantic_ratio", float_parser(0.0, 1.0), "Maximum semantic weight of hybrid search"),
    Field("retrieval.default_limit", "CODECOMPASS_RETRIEVAL_DEFAULT_LIMIT", "retrieval.default_limit",
          int_parser(1, 1000), "Results returned when a search sets no limit"),
    Field("retrieval.candidate_pool", "CODECOMPASS_RETRIEVAL_CANDIDATE_POOL",
          "retrieval.candidate_pool", int_parser(1, 1000),
          "Candidates each search channel contributes before ranking"),
    Field("retrieval.compact_every_n_syncs", "CODECOMPASS_RETRIEVAL_COMPACT_EVERY_N_SYNCS",
          "retrieval.compact_every_n_syncs", int_parser(1), "Compact the table and drop old versions every N syncs"),
    Field("retrieval.large_index_files", "CODECOMPASS_RETRIEVAL_LARGE_INDEX_FILES", "retrieval.large_index_files",
          int_parser(1, 10_000_000), "Source files above which a workspace's first index needs --force"),
    Field("retrieval.large_index_mb", "CODECOMPASS_RETRIEVAL_LARGE_INDEX_MB", "retrieval.large_index_mb",
          int_parser(1, 1_000_000), "Megabytes of source above which a workspace's first index needs --force"),
    Field("retrieval.static_channel", "CODECOMPASS_RETRIEVAL_STATIC_CHANNEL", "retrieval.static_channel",
          parse_bool, "Write static (code-static) vectors with every chunk, a semantic channel from the first sync"),
    Field("retrieval.checkout_bases", "CODECOMPASS_RETRIEVAL_CHECKOUT_BASES", "retrieval.checkout_bases",
          parse_bool, "Share bases between the checkouts of a repository: a new worktree's index costs its diff"),
    Field("retrieval.static_model_dir", "CODECOMPASS_RETRIEVAL_STATIC_MODEL_DIR", "retrieval.static_model_dir",
          parse_optional_path, "The static channel's model2vec folder (default: the committed code-static model)"),
    Field("retrieval.learned_ranking", "CODECOMPASS_RETRIEVAL_LEARNED_RANKING", "retrieval.learned_ranking",
          parse_bool, "Order results with the learned ranker (off: the hand-set ranking stack alone)"),
    Field("retrieval.ranker_model", "CODECOMPASS_RETRIEVAL_RANKER_MODEL", "retrieval.ranker_model",
          parse_optional_path,
          "The learned ranker's LightGBM model file for every index (default: the committed "
          "models/ranker/model.txt, or models/ranker/<provider>/model.txt for an index of a model with its own)"),
    Field("retrieval.searcher_refresh_s", "CODECOMPASS_RETRIEVAL_SEARCHER_REFRESH_S",
          "retrieval.searcher_refresh_s", optional_float_parser(0.0),
          "Seconds between a searcher's checks for a newer index version (default 0 local, 1 on an object store)"),
    Field("retrieval.searcher_cache", "CODECOMPASS_RETRIEVAL_SEARCHER_CACHE", "retrieval.searcher_cache", parse_bool,
          "A searcher reads a local copy of an index on S3, refreshed every searcher_refresh_s "
          "(off: reads the bucket)"),
    Field("retrieval.shard_runner", "CODECOMPASS_RETRIEVAL_SHARD_RUNNER", "retrieval.shard_runner",
          choice_parser(SHARD_RUNNERS),
          "processes | job: who runs a sharded index's workers (job: the writer posts the plan in the index "
          "and waits for an Indexed Job's pods)"),
    Field("rerank.provider", "CODECOMPASS_RERANK_PROVIDER", "rerank.provider", choice_parser(RERANK_PROVIDERS),
          "local | voyage | cohere | llm (local keeps the first-stage scores)"),
    Field("rerank.external_provider_enabled", "CODECOMPASS_RERANK_EXTERNAL_PROVIDER_ENABLED",
          "rerank.external_provider_enabled", parse_bool,
          "Privacy gate 1: allow an external rerank provider at all"),
    Field("rerank.allow_code_payload_to_external", "CODECOMPASS_RERANK_ALLOW_CODE_PAYLOAD_TO_EXTERNAL",
          "rerank.allow_code_payload_to_external", parse_bool,
          "Privacy gate 2: allow sending source code to it"),
    Field("rerank.api_key", RERANK_API_KEY_ENV, None, parse_optional_str,
          "API key of the rerank provider (env only; never read from files, never logged)"),
    Field("rerank.base_url", "CODECOMPASS_RERANK_BASE_URL", "rerank.base_url", parse_optional_str,
          "Endpoint of the rerank provider (required for llm: an OpenAI-compatible /v1 base)"),
    Field("rerank.model", "CODECOMPASS_RERANK_MODEL", "rerank.model", parse_optional_str,
          "Model of the rerank provider (rerank-2.5 / rerank-v3.5 by default; required for llm)"),
    Field("rerank.weight", "CODECOMPASS_RERANK_WEIGHT", "rerank.weight", float_parser(0.0, 1.0),
          "Share of the final score the gateway takes from the reranker's score"),
    Field("rerank.timeout_s", "CODECOMPASS_RERANK_TIMEOUT_S", "rerank.timeout_s",
          float_parser(0.0, exclusive_min=True), "Timeout of one rerank provider request"),
    Field("gateway.hubs", "CODECOMPASS_GATEWAY_HUBS", "gateway.hubs", parse_bool,
          "Run the structure stage (hub elevation) by default"),
    Field("gateway.candidates", "CODECOMPASS_GATEWAY_CANDIDATES", "gateway.candidates", int_parser(1, 500),
          "Candidates retrieval hands to the later stages"),
    Field("gateway.freshness_budget_ms", "CODECOMPASS_GATEWAY_FRESHNESS_BUDGET_MS", "gateway.freshness_budget_ms",
          int_parser(0, 600_000), "Milliseconds a query waits for the index to sync before answering "
          "from it as it stands (0: until the sync is done)"),
    Field("gateway.retrieve_timeout_s", "CODECOMPASS_GATEWAY_RETRIEVE_TIMEOUT_S", "gateway.retrieve_timeout_s",
          float_parser(0.0, exclusive_min=True), "Deadline of the retrieve stage"),
    Field("gateway.rerank_timeout_s", "CODECOMPASS_GATEWAY_RERANK_TIMEOUT_S", "gateway.rerank_timeout_s",
          float_parser(0.0, exclusive_min=True),
          "Deadline of the rerank stage; past it the first-stage order stands"),
    Field("gateway.hubs_timeout_s", "CODECOMPASS_GATEWAY_HUBS_TIMEOUT_S", "gateway.hubs_timeout_s",
          float_parser(0.0, exclusive_min=True), "Deadline of the structure stage; past it no hubs are added"),
    Field("gateway.select_timeout_s", "CODECOMPASS_GATEWAY_SELECT_TIMEOUT_S", "gateway.select_timeout_s",
          float_parser(0.0, exclusive_min=True), "Deadline of the selection stage; past it the ranked list answers"),
    Field("gateway.semantic_mode", "CODECOMPASS_GATEWAY_SEMANTIC_MODE", "gateway.semantic_mode",
          choice_parser(SEMANTIC_MODES), "off (lexical only, no embedding call) | rerank_only (no vectors; a "
          "model reranker may run) | hybrid (lexical + vectors)"),
    Field("gateway.confidence_threshold", "CODECOMPASS_GATEWAY_CONFIDENCE_THRESHOLD",
          "gateway.confidence_threshold", float_parser(0.0, 1.0),
          "Composite confidence below which an answer is low_confidence: search_code's flag and suggested action, "
          "semantic_search's relevance gate when a call sets no min_relevance"),
    Field("gateway.intent_confidence_threshold", "CODECOMPASS_GATEWAY_INTENT_CONFIDENCE_THRESHOLD",
          "gateway.intent_confidence_threshold", float_parser(0.0, 1.0),
          "Intent confidence below which search_code adds an intent escalation hint"),
    Field("gateway.rewrite_enabled", "CODECOMPASS_GATEWAY_REWRITE_ENABLED", "gateway.rewrite_enabled", parse_bool,
          "Rewrite question-like and zero-result queries with an LLM (needs rewrite base_url and model)"),
    Field("gateway.rewrite_base_url", "CODECOMPASS_GATEWAY_REWRITE_BASE_URL", "gateway.rewrite_base_url",
          parse_optional_str, "OpenAI-compatible /v1 base of the query-rewriting LLM (Ollama, vLLM, …)"),
    Field("gateway.rewrite_model", "CODECOMPASS_GATEWAY_REWRITE_MODEL", "gateway.rewrite_model",
          parse_optional_str, "Model of the query-rewriting LLM"),
    Field("gateway.rewrite_timeout_s", "CODECOMPASS_GATEWAY_REWRITE_TIMEOUT_S", "gateway.rewrite_timeout_s",
          float_parser(0.0, exclusive_min=True), "Timeout of one rewrite request; past it the query is "
          "searched as given"),
    Field("gateway.rewrite_api_key", REWRITE_API_KEY_ENV, None, parse_optional_str,
          "API key of the query-rewriting LLM (env only; never read from files, never logged)"),
    Field("gateway.rewrite_allow_remote", "CODECOMPASS_GATEWAY_REWRITE_ALLOW_REMOTE",
          "gateway.rewrite_allow_remote", parse_bool,
          "Allow a rewrite endpoint off this machine (it receives queries and symbol names); loopback needs "
          "no permission"),
    Field("gateway.auth_token", GATEWAY_AUTH_TOKEN_ENV, None, parse_optional_str,
          "Bearer token the MCP HTTP server requires, needed when it listens on anything but loopback (env only; "
          "never read from the config file, never logged)"),
    Field("gateway.auth_token_file", "CODECOMPASS_GATEWAY_AUTH_TOKEN_FILE", "gateway.auth_token_file",
          parse_optional_path, "File of accepted tokens, one a line, the current one first (when the variable is "
          "not set); read again when it changes, so a token rotates without a restart"),
    Field("gateway.allowed_hosts", "CODECOMPASS_GATEWAY_ALLOWED_HOSTS", "gateway.allowed_hosts", parse_names,
          "Host headers the MCP HTTP server accepts besides its own address (host:port or host:*; comma-separated "
          "in env)"),
    Field("gateway.allowed_origins", "CODECOMPASS_GATEWAY_ALLOWED_ORIGINS", "gateway.allowed_origins",
          parse_names, "Origin headers the MCP HTTP server accepts (scheme://host:port or scheme://host:*); a "
          "request with any other Origin is refused (403)"),
    Field("gateway.stateless_http", "CODECOMPASS_GATEWAY_STATELESS_HTTP", "gateway.stateless_http", parse_bool,
          "Serve streamable HTTP without sessions, so any of several gateway processes answers any request (a "
          "client's own model then cannot rewrite queries: sampling needs a session)"),
    Field("gateway.allowed_roots", "CODECOMPASS_GATEWAY_ALLOWED_ROOTS", "gateway.allowed_roots", parse_folders,
          f"Folders under which an MCP call may name its own workspace, besides the server's --workspace folders "
          f"('{os.pathsep}'-separated in env)"),
    Field("gateway.workspaces", "CODECOMPASS_GATEWAY_WORKSPACES", "gateway.workspaces", parse_folders,
          f"Workspaces the MCP server serves when started without --workspace, the first by default "
          f"('{os.pathsep}'-separated in env)"),
    Field("grpc.auth_token", GRPC_AUTH_TOKEN_ENV, None, parse_optional_str,
          "The service token: every gRPC call but health's must carry it (authorization: Bearer <token>) when set, "
          "and a server listening beyond loopback refuses to start without one; clients send it (env only; never "
          "read from the config file, never logged)"),
    Field("grpc.auth_token_file", GRPC_AUTH_TOKEN_FILE_ENV, "grpc.auth_token_file", parse_optional_path,
          "File of accepted service tokens, one a line, the current one first (when the variable is not set); "
          "servers accept each, clients send the first; read again when it changes, so the token rotates "
          "without a restart"),
    Field("grpc.tls_cert_file", "CODECOMPASS_GRPC_TLS_CERT_FILE", "grpc.tls_cert_file", parse_optional_path,
          "A server's certificate chain (PEM): set with its key, every gRPC server serves TLS only"),
    Field("grpc.tls_key_file", "CODECOMPASS_GRPC_TLS_KEY_FILE", "grpc.tls_key_file", parse_optional_path,
          "The private key of tls_cert_file (PEM)"),
    Field("grpc.tls_client_ca_file", "CODECOMPASS_GRPC_TLS_CLIENT_CA_FILE", "grpc.tls_client_ca_file",
          parse_optional_path, "CA certificates (PEM) a client's certificate must chain to: set, servers require "
          "one (mutual TLS)"),
    Field("grpc.tls_ca_file", "CODECOMPASS_GRPC_TLS_CA_FILE", "grpc.tls_ca_file", parse_optional_path,
          "CA certificates (PEM) clients verify servers with: set, every client dials TLS"),
    Field("grpc.tls_client_cert_file", "CODECOMPASS_GRPC_TLS_CLIENT_CERT_FILE", "grpc.tls_client_cert_file",
          parse_optional_path, "The certificate chain (PEM) a client presents to servers that require one"),
    Field("grpc.tls_client_key_file", "CODECOMPASS_GRPC_TLS_CLIENT_KEY_FILE", "grpc.tls_client_key_file",
          parse_optional_path, "The private key of tls_client_cert_file (PEM)"),
    Field("grpc.tls_server_name", "CODECOMPASS_GRPC_TLS_SERVER_NAME", "grpc.tls_server_name", parse_optional_str,
          "The name clients expect in the servers' certificates, when not the host they dial (one certificate "
          "for every service)"),
    Field("selection.max_tokens", "CODECOMPASS_SELECTION_MAX_TOKENS", "selection.max_tokens",
          int_parser(256, 1_000_000), "Token budget of an answer when the request sets none"),
    Field("selection.min_relevance", "CODECOMPASS_SELECTION_MIN_RELEVANCE", "selection.min_relevance",
          float_parser(0.0, 1.0), "Relevance gate of an answer when the request sets none (the gateway always "
          "sets one: gateway.confidence_threshold)"),
    Field("selection.merge_max_tokens", "CODECOMPASS_SELECTION_MERGE_MAX_TOKENS", "selection.merge_max_tokens",
          int_parser(0, 1_000_000), "Largest result a parent merged with its matching children may be"),
    Field("selection.render_timeout_s", "CODECOMPASS_SELECTION_RENDER_TIMEOUT_S", "selection.render_timeout_s",
          float_parser(0.0, exclusive_min=True), "Deadline of rendering; past it the stored source answers"),
)

# Settings that were removed because the policy they set has one home now (issue 17): named, so a
# setup that still sets one fails at start saying where the value lives, instead of losing it in
# silence. {(env variable, config key): why}
REMOVED = {
    **{(f"CODECOMPASS_GATEWAY_SEMANTIC_RATIO_{intent.upper()}", f"gateway.semantic_ratio_overrides.{intent}"):
       "the ranking policy sets the semantic ratio per intent (RankingPolicy's *_share in "
       "codecompass/policy/ranking.py); a request's semantic_ratio still caps it"
       for intent in ("symbol", "path", "error", "natural_language")},
    ("CODECOMPASS_SELECTION_FOCUS_MULTIPLIER", "selection.focus_multiplier"):
        "the relevance policy sets the focus multiplier (RelevancePolicy in codecompass/policy/relevance.py)",
}
# Settings that were renamed (issue 28: the writer role has one name): the old name is still read
# where the new one is unset, and either way the process says so once at start, so a deployment
# written before the rename keeps working while it moves over. {field target: (old env, old key)}
RENAMED = {"writer_addr": ("INDEXER_ADDR", "indexer_addr")}
SECRET_YAML_KEYS = {"embedding.api_key": API_KEY_ENV, "rerank.api_key": RERANK_API_KEY_ENV,
                    "gateway.rewrite_api_key": REWRITE_API_KEY_ENV, "gateway.auth_token": GATEWAY_AUTH_TOKEN_ENV,
                    "grpc.auth_token": GRPC_AUTH_TOKEN_ENV}


def documented_settings() -> list[tuple[str, str | None, str]]:
    """(env var, YAML key, description) of every setting, for docs and `codecompass config`."""
    return [(f.env, f.yaml_key, f.doc) for f in FIELDS]
