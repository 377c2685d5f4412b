"""How a client opens a channel to a CodeCompass service (`traced_channel`): message limits both ends
share, a reconnect that follows a restarted service within a second, and a CLIENT span per call
whose W3C trace context travels in the call's metadata, so the service's SERVER span continues the
caller's trace.

It lives apart from `codecompass.common.telemetry` (the one place a process sets telemetry up) so
that the client distribution needs only the OpenTelemetry *API*: without an SDK installed, as in a
program that only installed `codecompass-client`, the spans are the API's no-ops and cost nothing;
a CodeCompass process (or any program that installs an SDK) sees them exported like its own.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

import grpc
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

# Chunk streams of big files and embedding batches exceed gRPC's 4 MiB default.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)


class _CallDetails(
    namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")),
    grpc.ClientCallDetails,
):
    pass


def _split_method(full_method: str) -> tuple[str, str]:
    service, _, method = full_method.lstrip("/").partition("/")
    return service, method


def rpc_attributes(full_method: str) -> dict[str, str]:
    service, method = _split_method(full_method)
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}


def _end_client_span(span: trace.Span, call: Any) -> None:
    code = call.code()
    if code is not None:
        span.set_attribute("rpc.grpc.status_code", code.value[0])
        if code != grpc.StatusCode.OK:
            span.set_status(Status(StatusCode.ERROR, f"{code.name}: {call.details()}"))
    span.end()


class _ClientInterceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Starts a CLIENT span per RPC and carries its context in the call metadata."""

    def __init__(self) -> None:
        self._tracer = trace.get_tracer("codecompass.grpc.client")

    def _start(self, details: grpc.ClientCallDetails) -> tuple[trace.Span, grpc.ClientCallDetails]:
        span = self._tracer.start_span(
            details.method.lstrip("/"), kind=SpanKind.CLIENT, attributes=rpc_attributes(details.method)
        )
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        metadata = list(details.metadata or []) + list(carrier.items())
        new_details = _CallDetails(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )
        return span, new_details

    def _intercept(self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any) -> Any:
        span, new_details = self._start(details)
        try:
            call = continuation(new_details, request)
        except Exception as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            span.end()
            raise
        call.add_done_callback(lambda done: _end_client_span(span, done))
        return call

    def intercept_unary_unary(self, continuation, client_call_details, request):
        return self._intercept(continuation, client_call_details, request)

    def intercept_unary_stream(self, continuation, client_call_details, request):
        return self._intercept(continuation, client_call_details, request)


# gRPC's reconnect backoff grows from 1 s to 120 s while a service is down, and a channel in
# backoff fails every call at once: after a 30 s outage a channel refused calls for another 15 s
# although the service was back (`codecompass up` restarts a dead service on the port it had).
# Local services restart in seconds; retrying a loopback connect every second costs nothing.
# Each channel keeps its own connections: gRPC shares them between channels to one address by
# default, so a fresh channel (the clients' second try after UNAVAILABLE) would inherit the
# backoff of the one that failed.
RECONNECT_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.use_local_subchannel_pool", 1),
    # An address naming several servers (a Kubernetes headless Service's DNS name, dns:///retrieval:50053,
    # or a list, ipv4:10.0.0.1:50053,10.0.0.2:50053) spreads calls over every one that is up, and a
    # server that dies only loses the calls it had; gRPC's default, pick_first, would send everything to
    # one searcher. One address behaves as before.
    ("grpc.lb_policy_name", "round_robin"),
)


def traced(channel: grpc.Channel) -> grpc.Channel:
    """`channel`, its unary and server-streaming calls traced."""
    return grpc.intercept_channel(channel, _ClientInterceptor())


def traced_channel(addr: str) -> grpc.Channel:
    """Insecure loopback channel whose unary and server-streaming calls are traced, and which
    reconnects within a second of its service coming back."""
    return traced(grpc.insecure_channel(addr, options=CHANNEL_OPTIONS + RECONNECT_OPTIONS))
