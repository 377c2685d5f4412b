"""Who may talk to the MCP server over HTTP (issue 15, section 5: remote use is safe by default).

The server listens on --host, else on CODECOMPASS_BIND_HOST (`bind_host`), the host every
CodeCompass server binds. A loopback bind (127.0.0.0/8, ::1, localhost) is reachable from this
machine only: it keeps the checks the MCP SDK makes by default there (the Host and Origin of a
request must be a loopback name, against DNS rebinding from a web page), extended to the address
actually bound and to the configured lists.

Any other bind is reachable from the network, so the server refuses to start unless
- a bearer token is set (`CODECOMPASS_GATEWAY_AUTH_TOKEN`, or `gateway.auth_token_file`): every
  request must carry `Authorization: Bearer <token>`, compared in constant time; without it, 401.
  The file holds one token a line (blank lines and `#` lines aside), each accepted, and is read
  again whenever it changes (`AcceptedTokens`, by the rules every CodeCompass server shares:
  `codecompass.common.bearer`): a token is rotated by writing the new one above
  the old, moving the clients over, then removing the old line, with no restart and so no MCP
  session lost (docs/runbooks.md). The variable is read once, at start;
- the Host names clients use are known: the address bound, when it is one address, and
  `gateway.allowed_hosts`; a request for any other Host is refused (421, the SDK's answer), and one
  from a browser Origin not in `gateway.allowed_origins` too (403).
It then logs one line saying what it exposes (never the token). `wire.Guarded` applies this.

Which folders a call may open is the other half (`tools.resolve_workspace`): the server's
--workspace folders and the allowed roots, whatever the transport.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from codecompass.common.bearer import BearerTokens, TokenRefused, long_enough, read_token_file
from codecompass.common.config import GATEWAY_AUTH_TOKEN_ENV, GatewaySettings
from codecompass.common.hosts import host_port, is_loopback

# What the SDK allows on a loopback bind when it is left to choose (its streamable_http_app).
_LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
_LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
_ANY_ADDRESS = ("0.0.0.0", "::", "")

Transport = Literal["stdio", "streamable-http"]
TOKEN_FILE_SETTING = "gateway.auth_token_file"


class RemoteRefused(ValueError):
    """The server must not start as asked; the message says why and what to set, in one line."""


@dataclass(frozen=True)
class Exposure:
    """What the HTTP server accepts: from where (Host, Origin) and with which token (None: none
    needed, on loopback)."""

    host: str
    port: int
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    # The current token (the file's first); None: no token needed, on loopback.
    token: str | None = field(default=None, repr=False)
    token_source: str = ""
    # Where the tokens are read again from when it changes; None: the token is the variable's.
    token_file: Path | None = None

    @property
    def loopback(self) -> bool:
        return self.token is None

    def summary(self, workspaces: tuple[Path, ...], roots: tuple[Path, ...]) -> dict[str, Any]:
        """What is exposed, for the one log line: never the token, only where it comes from."""
        return {"url": f"http://{host_port(self.host, self.port)}/mcp", "workspaces": [str(w) for w in workspaces],
                "allowed_roots": [str(r) for r in roots], "allowed_hosts": list(self.allowed_hosts),
                "allowed_origins": list(self.allowed_origins),
                "auth": f"bearer token from {self.token_source}" if self.token else "none (loopback only)"}


@dataclass(frozen=True)
class ServerPlan:
    """What a server serves: its workspaces (the first answers calls that name none), the roots
    under which a call may name another, and, over HTTP, whom it lets in."""

    workspaces: tuple[Path, ...]
    allowed_roots: tuple[Path, ...] = ()
    transport: Transport = "stdio"
    exposure: Exposure | None = None  # streamable-http only


def exposure(host: str, port: int, gateway: GatewaySettings, host_from: str = "--host") -> Exposure:
    """What a server bound to `host:port` accepts; RemoteRefused when it may not start. `host_from`
    names where the host came from, for the refusal's line."""
    if is_loopback(host):
        hosts = (*_LOOPBACK_HOSTS, host_port(host, "*"), *gateway.allowed_hosts)
        origins = (*_LOOPBACK_ORIGINS, f"http://{host_port(host, '*')}", *gateway.allowed_origins)
        return Exposure(host, port, tuple(dict.fromkeys(hosts)), tuple(dict.fromkeys(origins)))
    tokens, source = _tokens(gateway)
    token = tokens[0] if tokens else None
    if token is None:
        raise RemoteRefused(f"{host_from} {host} listens beyond this machine: set {GATEWAY_AUTH_TOKEN_ENV} (or "
                            "gateway.auth_token_file) to the bearer token clients must send, or listen on 127.0.0.1")
    hosts = gateway.allowed_hosts if host in _ANY_ADDRESS else (host_port(host, port), *gateway.allowed_hosts)
    if not hosts:
        raise RemoteRefused(f"{host_from} {host} listens on every address: set gateway.allowed_hosts "
                            "(CODECOMPASS_GATEWAY_ALLOWED_HOSTS) to the host names clients use, e.g. "
                            f"myhost.example:{port}")
    token_file = None if gateway.auth_token else gateway.auth_token_file
    return Exposure(host, port, tuple(dict.fromkeys(hosts)), gateway.allowed_origins, token, source, token_file)


def _tokens(gateway: GatewaySettings) -> tuple[tuple[str, ...], str]:
    try:
        if gateway.auth_token:
            return long_enough((gateway.auth_token,), GATEWAY_AUTH_TOKEN_ENV), GATEWAY_AUTH_TOKEN_ENV
        if gateway.auth_token_file is None:
            return (), ""
        return read_token_file(gateway.auth_token_file, TOKEN_FILE_SETTING), str(gateway.auth_token_file)
    except TokenRefused as exc:
        raise RemoteRefused(str(exc)) from None


class AcceptedTokens(BearerTokens):
    """The bearer tokens a request may carry: the variable's, fixed, or the token file's as it
    stands (`BearerTokens`: read again when it changes, the last good tokens kept otherwise)."""

    def __init__(self, exposure: Exposure) -> None:
        assert exposure.token is not None
        super().__init__(token=None if exposure.token_file else exposure.token, file=exposure.token_file,
                         setting=TOKEN_FILE_SETTING if exposure.token_file else GATEWAY_AUTH_TOKEN_ENV)
