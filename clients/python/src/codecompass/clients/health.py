"""The one health client: is a service SERVING? Used by `codecompass up`/`status` and by containers.

    python -m codecompass.clients.health HOST:PORT [--service NAME] [--timeout S]
    python -m codecompass.clients.health http://HOST:PORT/healthz [--timeout S]

Exits 0 when the service answers SERVING (a URL: HTTP 200), else 1 with one line saying what it
answered instead or why it could not be asked. A gRPC target is asked with the standard
grpc.health.v1 Check (every server here registers it: NOT_SERVING until warmed up and again once
it drains); a URL, for the gateway's HTTP server, with a GET. Container health checks run it
(as common/probe.py in the services' distribution, deploy/compose.yaml): the images carry no curl
or grpc_health_probe, and a second client of the same protocol would be one more thing to keep in step.

The channel is a plain one, not the package's traced channel: a probe every few seconds would
fill the traces with health checks and tell an operator nothing. It dials as the process's
default transport says (transport.py), and sends no token: health needs none. In the services'
containers the probe is `python -m codecompass.common.probe`, which dials as their `grpc`
settings say (TLS when the service serves it).
"""

from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from codecompass.clients import transport as transports
from codecompass.clients.transport import ClientTransport

SERVING = "SERVING"
# Not statuses the protocol has: the server has no such service, or could not be asked at all.
SERVICE_UNKNOWN = "SERVICE_UNKNOWN"
UNREACHABLE = "UNREACHABLE"
# Well under a container runtime's own health-check timeout (compose: 5 s), so the answer is ours.
DEFAULT_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class Health:
    """What a service answered: SERVING / NOT_SERVING / UNKNOWN / SERVICE_UNKNOWN / UNREACHABLE,
    and for the last two, why."""

    status: str
    detail: str = ""

    @property
    def serving(self) -> bool:
        return self.status == SERVING

    def line(self, target: str) -> str:
        return f"{target}: {self.status}" + (f" ({self.detail})" if self.detail else "")


def check(address: str, service: str = "", timeout_s: float = DEFAULT_TIMEOUT_S,
          transport: ClientTransport | None = None) -> Health:
    """The health of `service` ("" = the whole server) at a gRPC `address`, dialled as `transport`
    says (by default, as the process's default transport says)."""
    dial = transport if transport is not None else transports.default()
    with dial.channel(address) as channel:
        try:
            response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                                 timeout=timeout_s)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return Health(SERVICE_UNKNOWN, f"the server has no service {service!r}")
            return Health(UNREACHABLE, f"{exc.code().name}: {exc.details()}")
    return Health(health_pb2.HealthCheckResponse.ServingStatus.Name(response.status))


def check_url(url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Health:
    """An HTTP health endpoint: SERVING on 200, NOT_SERVING with the status on any other answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            code = response.status
    except urllib.error.HTTPError as exc:
        code = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        return Health(UNREACHABLE, str(reason))
    return Health(SERVING) if code == 200 else Health("NOT_SERVING", f"HTTP {code}")


def _is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def main(argv: Sequence[str] | None = None, prog: str = "python -m codecompass.clients.health") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("target", help="HOST:PORT of a gRPC service, or the http:// URL of a health endpoint")
    parser.add_argument("--service", default="",
                        help="the gRPC service to ask about (default: the whole server); not for a URL")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                        help=f"seconds to wait for the answer (default {DEFAULT_TIMEOUT_S:g})")
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be above 0")
    if _is_url(args.target):
        if args.service:
            parser.error("--service names a gRPC service; a URL has none")
        health = check_url(args.target, args.timeout)
    else:
        try:
            health = check(args.target, args.service, args.timeout)
        except Exception as exc:  # noqa: BLE001 - a default transport's own error (the services' ConfigError): one line
            print(f"{args.target}: cannot dial it: {exc}", file=sys.stderr)
            return 1
    if health.serving:
        return 0
    print(health.line(args.target), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
