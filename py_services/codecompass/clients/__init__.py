"""One typed client per service, shared by the gateway, the CLI, the benchmarks and the tests.

Each client owns a traced channel (W3C trace context crosses every hop), puts a deadline on
every call, converts between domain types and protos with the service's own `convert`
module, and turns gRPC failures into `ServiceError`, which names the service that failed.
"""

from codecompass.clients.errors import ServiceError

__all__ = ["ServiceError"]
