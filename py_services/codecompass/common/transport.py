"""Who may call a CodeCompass gRPC server, and over what (issue 31 §4): the service token and TLS,
from the `grpc` settings, for both ends.

A server bound beyond loopback (common/hosts.py) is reachable from the network, so, as the MCP
gateway does (codecompass_gateway/remote.py), it refuses to start without a service token: every
call must then carry `authorization: Bearer <token>`, compared in constant time, or is refused
with UNAUTHENTICATED. On loopback a token is optional and enforced when set. Two exemptions:
- grpc.health.v1.Health: Kubernetes' native gRPC probes (and Docker health checks) send no
  metadata, and a probe that failed would take a serving pod out of its Service. Health tells a
  caller only whether the server serves;
- none else. Server reflection requires the token like any call: it lists every RPC and message,
  which is a map of the service for whoever can reach it (`grpcurl -H 'authorization: Bearer …'`).

TLS is optional and comes from files: a server certificate and key make every server serve TLS
only; a client CA makes it require a client certificate signed by it (mTLS). Clients dial TLS when
a CA is set, and present their own certificate when one is set. The files are read at start: a
renewed certificate takes a restart (a rolling one in Kubernetes), a rotated token does not.

The Node analysis service applies the same rules to the same variables (node_ts_service/src/auth.ts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from codecompass.clients.transport import AUTHORIZATION, ClientTransport
from codecompass.common.bearer import BearerTokens, TokenRefused
from codecompass.common.config import (
    BIND_HOST_ENV,
    GRPC_AUTH_TOKEN_ENV,
    GRPC_AUTH_TOKEN_FILE_ENV,
    ConfigError,
    GrpcSettings,
)
from codecompass.common.hosts import LOOPBACK, is_loopback
from codecompass.common.logging import get_logger

log = get_logger("codecompass.transport")

TOKEN_FILE_SETTING = "grpc.auth_token_file"
# The service every call of which is answered without a token (see the module's docstring).
HEALTH_SERVICE = "grpc.health.v1.Health"
UNAUTHENTICATED_MESSAGE = "missing or wrong service token: send the metadata authorization: Bearer <token>"


class TransportRefused(ConfigError):
    """A server must not start as configured, or a client cannot dial as configured; the message
    says why and what to set, in one line. A ConfigError: every entry point reports those as one
    line (the settings' own check, `load_settings`, finds most of them first)."""


@dataclass(frozen=True)
class ServerTransport:
    """How a server listens: its credentials (None: plaintext) and the tokens a call must carry
    (None: none asked)."""

    credentials: grpc.ServerCredentials | None
    tokens: BearerTokens | None
    tls: str  # "off", "tls" or "mtls", for the log line

    def summary(self) -> dict[str, str]:
        """What the server asks of its callers, for the one log line: never the token."""
        return {"tls": self.tls, "auth": f"service token from {self.tokens.source}" if self.tokens else "none"}

    def interceptors(self) -> list[grpc.ServerInterceptor]:
        return [] if self.tokens is None else [_TokenCheck(self.tokens)]


def server_transport(settings: GrpcSettings, host: str, host_from: str = BIND_HOST_ENV) -> ServerTransport:
    """How a server bound to `host` listens; TransportRefused when it may not start. `host_from`
    names where the host came from, for the refusal's line."""
    try:
        tokens = _tokens(settings)
    except TokenRefused as exc:
        raise TransportRefused(str(exc)) from None
    if tokens is None and not is_loopback(host):
        raise TransportRefused(f"{host_from} {host} listens beyond this machine: set {GRPC_AUTH_TOKEN_ENV} or "
                               f"{GRPC_AUTH_TOKEN_FILE_ENV} to the service token clients must send, or listen on "
                               f"{LOOPBACK}")
    if settings.tls_cert_file is None or settings.tls_key_file is None:
        return ServerTransport(None, tokens, "off")
    client_ca = None if settings.tls_client_ca_file is None else _read(settings.tls_client_ca_file,
                                                                       "grpc.tls_client_ca_file")
    credentials = grpc.ssl_server_credentials(
        [(_read(settings.tls_key_file, "grpc.tls_key_file"), _read(settings.tls_cert_file, "grpc.tls_cert_file"))],
        root_certificates=client_ca, require_client_auth=client_ca is not None)
    return ServerTransport(credentials, tokens, "mtls" if client_ca else "tls")


def _tokens(settings: GrpcSettings) -> BearerTokens | None:
    if settings.auth_token:
        return BearerTokens(token=settings.auth_token, setting=GRPC_AUTH_TOKEN_ENV)
    if settings.auth_token_file is not None:
        return BearerTokens(file=settings.auth_token_file, setting=TOKEN_FILE_SETTING)
    return None


def _read(path: Path, setting: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TransportRefused(f"{setting} {path}: cannot read it ({exc.strerror})") from None


class _TokenCheck(grpc.ServerInterceptor):
    """Refuses, with UNAUTHENTICATED and one line, a call (health's aside) whose metadata carries no
    accepted token."""

    def __init__(self, tokens: BearerTokens) -> None:
        self._tokens = tokens

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
                          handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or method.lstrip("/").partition("/")[0] == HEALTH_SERVICE:
            return handler
        if self._authorized(handler_call_details.invocation_metadata):
            return handler
        return _refusal(handler, method)

    def _authorized(self, metadata: Any) -> bool:
        given = next((value for key, value in metadata or () if key == AUTHORIZATION), "")
        if isinstance(given, str):
            given = given.encode()
        scheme, _, token = given.strip().partition(b" ")
        # Constant time (BearerTokens.accepts): how much of a guess matched must not show in how long
        # the answer takes.
        return scheme.lower() == b"bearer" and self._tokens.accepts(token.strip())


def _refusal(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
    """A handler of `handler`'s shape that refuses the call; requests are left undecoded."""

    def refuse(_request: Any, context: grpc.ServicerContext) -> Any:
        # Who tried, never with what.
        log.warning("refused a call without a valid service token", extra={"method": method,
                                                                           "peer": context.peer()})
        context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(refuse)
    return grpc.unary_unary_rpc_method_handler(refuse)


def client_transport(settings: GrpcSettings) -> ClientTransport:
    """How this process's clients dial; TransportRefused (one line) for a token or file that cannot
    be used."""
    try:
        tokens = _tokens(settings)
    except TokenRefused as exc:
        raise TransportRefused(str(exc)) from None
    if settings.tls_ca_file is None:
        return ClientTransport(tokens=tokens)
    key = cert = None
    if settings.tls_client_cert_file is not None and settings.tls_client_key_file is not None:
        key = _read(settings.tls_client_key_file, "grpc.tls_client_key_file")
        cert = _read(settings.tls_client_cert_file, "grpc.tls_client_cert_file")
    credentials = grpc.ssl_channel_credentials(_read(settings.tls_ca_file, "grpc.tls_ca_file"), key, cert)
    return ClientTransport(credentials, settings.tls_server_name, tokens)
