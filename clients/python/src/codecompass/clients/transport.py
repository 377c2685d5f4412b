"""How a client dials a CodeCompass service: plaintext or TLS, and the service token each call
sends (a service bound beyond loopback refuses calls without it; docs/grpc.md).

A client is given a `ClientTransport`, or uses the process's default. In the services' own
processes (services, gateway, CLI) that default follows their `grpc` settings: their
configuration package registers it (`common/config`), so every caller does as the deployment says.
A program using only this package builds one (`ClientTransport.of`) and passes it, or sets it as
its default. Out of the box: plaintext, no token (loopback).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc

AUTHORIZATION = "authorization"


class TokenSource(Protocol):
    """Where the token comes from: the current one, read again when it may have changed (a
    rotated token file)."""

    def current(self) -> str: ...


@dataclass(frozen=True)
class StaticToken:
    token: str

    def current(self) -> str:
        return self.token


@dataclass(frozen=True)
class ClientTransport:
    """How a client dials: its credentials (None: plaintext), the name it expects in the servers'
    certificates, and the service token it sends (None: none)."""

    credentials: grpc.ChannelCredentials | None = None
    server_name: str | None = None
    tokens: TokenSource | None = None

    @classmethod
    def of(cls, *, token: str | None = None, ca_file: Path | None = None, client_cert_file: Path | None = None,
           client_key_file: Path | None = None, server_name: str | None = None) -> ClientTransport:
        """A transport from a token and PEM files: TLS when `ca_file` is given, mTLS with a client
        certificate and key too."""
        tokens = StaticToken(token) if token else None
        if ca_file is None:
            return cls(tokens=tokens)
        key = client_key_file.read_bytes() if client_key_file is not None else None
        cert = client_cert_file.read_bytes() if client_cert_file is not None else None
        return cls(grpc.ssl_channel_credentials(ca_file.read_bytes(), key, cert), server_name, tokens)

    def channel(self, address: str, options: tuple[tuple[str, Any], ...] = ()) -> grpc.Channel:
        if self.credentials is None:
            return grpc.insecure_channel(address, options=options)
        if self.server_name:
            options = (*options, ("grpc.ssl_target_name_override", self.server_name))
        return grpc.secure_channel(address, self.credentials, options=options)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The metadata every call carries: the current service token."""
        return () if self.tokens is None else ((AUTHORIZATION, f"Bearer {self.tokens.current()}"),)


# What a client made without a transport of its own uses, asked when the client is made.
_lock = threading.Lock()
_default: Callable[[], ClientTransport] = ClientTransport


def set_default(transport: ClientTransport | Callable[[], ClientTransport]) -> None:
    """The transport of every client made from now on without one of its own: a transport, or a
    function that gives the current one (the services' distribution registers one that reads its
    `grpc` settings when a client is made)."""
    global _default
    with _lock:
        _default = transport if callable(transport) else (lambda: transport)


def default() -> ClientTransport:
    with _lock:
        provider = _default
    return provider()
