"""`python -m codecompass.embedding`: serve EmbeddingService on EMBEDDING_PORT.

Health is NOT_SERVING until the provider's warmup (model load plus one tiny
batch) returns; heavy imports happen in that warmup, after the port is bound.
"""

from __future__ import annotations

import sys

from codecompass.common import names
from codecompass.common.config import ConfigError, load_settings
from codecompass.common.logging import configure_logging, get_logger
from codecompass.common.serving import ServiceSpec, serve_forever
from codecompass.common.telemetry import init_telemetry, shutdown_telemetry
from codecompass.embedding.profiles import choose_provider
from codecompass.embedding.servicer import EmbeddingServicer, register


def main() -> int:
    log = get_logger("codecompass.embedding")
    try:
        configure_logging(names.EMBEDDING)
        settings = load_settings()
        # Once the settings say where metrics go; still before any server or client exists.
        init_telemetry(names.EMBEDDING, metrics_port=settings.metrics_port(names.EMBEDDING),
                       metrics_host=settings.bind_host)
        choice = choose_provider(settings.embedding)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        print(f"error: {exc}", file=sys.stderr, flush=True)
        shutdown_telemetry()
        return 2
    spec = ServiceSpec(name=names.EMBEDDING, register=register(EmbeddingServicer(choice)),
                       warmup=choice.provider.warmup, scaled_out=True,
                       reflection=settings.grpc_reflection)
    return serve_forever(spec, host=settings.bind_host, port=settings.embedding_port,
                         grace_s=settings.shutdown_grace_s, transport=settings.grpc)


if __name__ == "__main__":
    sys.exit(main())
