"""One typed client per service, shared by the gateway, the CLI, the benchmarks and the tests.

Each client calls through one `channel.ServiceChannel`: a traced channel (W3C trace context
crosses every hop), a deadline on every call, gRPC failures as `ServiceError` (which names the
service that failed), and one more try on a fresh channel, where the caller's resolver says the
service is now, when it was unreachable (a restarted service). Clients convert between domain
types and protos with their service's contract (`codecompass.contracts.<service>.convert`); a
client imports contracts, never a service.
"""

from codecompass.clients.errors import ServiceError

__all__ = ["ServiceError"]
