"""gRPC server lifecycle shared by the Python services: health, warmup, graceful stop.

Health follows the standard grpc.health.v1 protocol for the overall server
("") and each registered service: NOT_SERVING until warmup returns (model
loaded, table opened), SERVING after, NOT_SERVING again from the moment
shutdown begins so load balancers and `codecompass status` stop sending work
before the drain ends.
"""

from __future__ import annotations

import gc
import signal
import sys
import threading
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from codecompass.common.channels import CHANNEL_OPTIONS
from codecompass.common.config import GrpcSettings
from codecompass.common.cores import one_blas_thread
from codecompass.common.hosts import LOOPBACK, host_port, is_loopback
from codecompass.common.logging import get_logger
from codecompass.common.telemetry import server_interceptor, shutdown_telemetry
from codecompass.common.transport import TransportRefused, server_transport

log = get_logger("codecompass.serving")
OVERALL = ""


# How long a connection to a scaled-out server lives, and how long its calls may then finish. A
# client balancing over a DNS name (round_robin) learns of new servers only when it resolves the
# name again, which it does when a connection closes: closing each connection after a minute lets
# servers an autoscaler adds take their share of the load within a minute. Calls in flight finish
# (their deadlines are shorter than the grace), and clients reconnect transparently.
MAX_CONNECTION_AGE_S = 60.0
MAX_CONNECTION_AGE_GRACE_S = 30.0

# Trailing metadata of an UNAVAILABLE that retrying will not cure soon: a service this one depends
# on is down, or an external provider that the service already retried. gRPC clients honour it
# (retry pushback, gRFC A6) and do not try again, so the retries of the published service config
# (clients/service_config.json) never multiply across hops.
NO_RETRY = (("grpc-retry-pushback-ms", "-1"),)


@dataclass
class ServiceSpec:
    name: str  # the service's one name (codecompass.common.names)
    register: Callable[[grpc.Server], list[str]]
    warmup: Callable[[], None] | None = None
    # What the service loads once it serves, in the warmup's thread, for the requests that come
    # after it (they wait for what they need): a start is judged by its time to SERVING, and a
    # cold start's first search comes after an index is written.
    after_serving: Callable[[], None] | None = None
    # Servers that scale out behind one name (searchers, embedding, rerank) age their connections
    # (MAX_CONNECTION_AGE_S); not the index writer, whose index streams run for many minutes.
    scaled_out: bool = False
    # Server reflection (grpc_reflection): what a client with no protos in hand (grpcurl, grpcui,
    # Postman) lists and calls by. The `grpc_reflection` setting turns it off.
    reflection: bool = True


class WarmupFailed(RuntimeError):
    """The service could not get ready (e.g. its model failed to load)."""


class RunningServer:
    """A started gRPC server plus its health state."""

    def __init__(self, server: grpc.Server, health_servicer: health.HealthServicer,
                 service_names: list[str], host: str, port: int, name: str) -> None:
        self.server = server
        self.health = health_servicer
        self.service_names = service_names
        self.port = port
        self.address = host_port(host, port)
        self.name = name
        self._ready = threading.Event()
        self._warmup_error: BaseException | None = None
        self._stopped = False

    def _set_all(self, status: int) -> None:
        for service in (OVERALL, *self.service_names):
            self.health.set(service, status)

    def _run_warmup(self, warmup: Callable[[], None] | None, after_serving: Callable[[], None] | None = None) -> None:
        try:
            if warmup is not None:
                warmup()
        except Exception as exc:
            self._warmup_error = exc
            log.exception("warmup of %s failed", self.name)
        else:
            # What startup loaded (modules, models, the ranker) lives as long as the process:
            # moved out of the collector's sight, a full collection walks only what requests
            # made since. On ws-300k the retrieval service's full collections took up to 0.8 s,
            # a search's latency tail.
            gc.freeze()
            if not self._stopped:
                self._set_all(health_pb2.HealthCheckResponse.SERVING)
                log.info("serving", extra={"address": self.address})
        finally:
            self._ready.set()
        if after_serving is not None and self._warmup_error is None:
            try:
                after_serving()
            except Exception:  # noqa: BLE001 - what fails here fails again, and is said, where it is used
                log.exception("loading after the start of %s failed", self.name)
            gc.freeze()

    @property
    def warmup_error(self) -> BaseException | None:
        return self._warmup_error if self._ready.is_set() else None

    def wait_until_serving(self, timeout: float) -> None:
        if not self._ready.wait(timeout):
            raise TimeoutError(f"{self.name} not SERVING after {timeout:.1f}s")
        if self._warmup_error is not None:
            raise WarmupFailed(f"{self.name} warmup failed: {self._warmup_error}") from self._warmup_error

    def wait_for_warmup(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def stop(self, grace_s: float | None = None) -> None:
        """NOT_SERVING first, then stop accepting and let in-flight RPCs run for grace_s."""
        self._stopped = True
        self.health.enter_graceful_shutdown()
        self.server.stop(grace_s).wait()


_AGED = (
    ("grpc.max_connection_age_ms", int(MAX_CONNECTION_AGE_S * 1000)),
    ("grpc.max_connection_age_grace_ms", int(MAX_CONNECTION_AGE_GRACE_S * 1000)),
)


def start_server(spec: ServiceSpec, *, host: str = LOOPBACK, port: int = 0, max_workers: int = 16,
                 warmup_in_background: bool = True, transport: GrpcSettings | None = None) -> RunningServer:
    """Start serving `spec` on `host:port`, with the token and TLS `transport` says (none by
    default, which only a loopback host allows); TransportRefused before anything listens when the
    server may not start so, OSError when it cannot listen."""
    security = server_transport(transport or GrpcSettings(), host)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=f"{spec.name}-rpc"),
        # Tracing outside the token check: a refused call is a span (UNAUTHENTICATED) and a metric too.
        interceptors=[server_interceptor(), *security.interceptors()],
        # gRPC binds with SO_REUSEPORT by default, so two servers could share one port and split
        # its connections: `codecompass up` restarts a service on the port it had, and must find
        # out when another program took it meanwhile.
        options=(*CHANNEL_OPTIONS, ("grpc.so_reuseport", 0), *(_AGED if spec.scaled_out else ())),
    )
    service_names = list(spec.register(server))
    health_servicer = health.HealthServicer(
        experimental_non_blocking=True,
        experimental_thread_pool=futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="health-watch"),
    )
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    if spec.reflection:
        reflection.enable_server_reflection((*service_names, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    wanted = host_port(host, port)
    try:
        bound = (server.add_insecure_port(wanted) if security.credentials is None
                 else server.add_secure_port(wanted, security.credentials))
    except RuntimeError as exc:
        raise OSError(f"{spec.name}: cannot listen on {wanted} ({exc})") from None
    if bound == 0:
        raise OSError(f"{spec.name}: cannot listen on {wanted} (address in use?)")
    running = RunningServer(server, health_servicer, service_names, host, bound, spec.name)
    running._set_all(health_pb2.HealthCheckResponse.NOT_SERVING)
    server.start()
    # The launcher (`codecompass up`) reads this line to learn the port picked for port 0.
    print(f"LISTENING {running.address}", flush=True)
    log.info("listening, warming up", extra={"address": running.address, **security.summary()})
    if not is_loopback(host):
        # Beyond loopback the service token is required (server_transport); what it does not hide
        # without TLS is the traffic itself.
        log.warning("listening beyond this machine: calls need the service token",
                    extra={"address": running.address, **security.summary()})
    if warmup_in_background:
        threading.Thread(target=running._run_warmup, args=(spec.warmup, spec.after_serving),
                         name=f"{spec.name}-warmup", daemon=True).start()
    else:
        running._run_warmup(spec.warmup, spec.after_serving)
    return running


def serve_forever(spec: ServiceSpec, *, host: str, port: int, grace_s: float, transport: GrpcSettings) -> int:
    """Serve until SIGTERM/SIGINT; returns the process exit code.

    A server that may not start as configured (beyond loopback without a service token, a TLS file
    that cannot be read) exits 2 with one line saying what to set, as a bad setting does.

    On a signal: NOT_SERVING, stop accepting, then give in-flight RPCs up to
    grace_s to finish (an index stream in progress ends at its next batch
    boundary rather than mid-write), flush telemetry, exit 0. A failed warmup
    exits 1 so the launcher reports it instead of waiting on a dead service.
    """
    stop_requested = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        log.info("received %s", signal.Signals(signum).name)
        stop_requested.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    one_blas_thread()
    try:
        running = start_server(spec, host=host, port=port, transport=transport)
    except TransportRefused as exc:
        log.error("refused to start: %s", exc)
        print(f"error: {exc}", file=sys.stderr, flush=True)
        shutdown_telemetry()
        return 2
    except OSError as exc:
        log.error("%s", exc)
        print(f"error: {exc}", file=sys.stderr, flush=True)
        shutdown_telemetry()
        return 1
    exit_code = 0
    # Poll so a warmup failure in its thread ends the process too; wait() still
    # returns at once on a signal because the handler sets the event.
    while not stop_requested.wait(0.2):
        if running.warmup_error is not None:
            exit_code = 1
            break
    log.info("shutting down", extra={"grace_s": grace_s})
    running.stop(grace_s)
    log.info("stopped")
    shutdown_telemetry()
    return exit_code
