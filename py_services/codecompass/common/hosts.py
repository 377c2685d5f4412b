"""Host and address text: which host a server may bind, which hosts are loopback, how a
``host:port`` is written, and where a client dials a server that bound every interface.

The Node analysis service applies the same rules to the same setting (CODECOMPASS_BIND_HOST) in
node_ts_service/src/config.ts.
"""

from __future__ import annotations

import ipaddress
import re

LOOPBACK = "127.0.0.1"
# An RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens.
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                        r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
# Binding these listens on every interface; a client on this machine reaches them on loopback.
_WILDCARDS = {"0.0.0.0": LOOPBACK, "::": "::1"}


def bind_host(text: str) -> str:
    """``text`` as a host to listen on (an IP address, IPv6 with or without brackets, or a host
    name); ValueError when it is none of those (a port, a URL, blanks)."""
    host = text.strip()
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    if _HOST_NAME.match(host) and not host.replace(".", "").isdigit():
        return host
    raise ValueError(f"expected an IP address or host name to listen on (e.g. 127.0.0.1, 0.0.0.0, ::), "
                     f"got {text!r}")


def is_loopback(host: str) -> bool:
    """True for hosts only this machine can reach: 127.0.0.0/8, ::1, localhost."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to any address


def host_port(host: str, port: int | str) -> str:
    """``host:port``, with an IPv6 host in brackets (``[::1]:50051``)."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def dialable(address: str) -> str:
    """Where a client on this machine reaches a server listening on ``address``: a wildcard bind
    (0.0.0.0, ::) is dialled on loopback, any other address as it is."""
    host, _, port = address.rpartition(":")
    bare = host.strip("[]")
    return host_port(_WILDCARDS[bare], port) if bare in _WILDCARDS else address
