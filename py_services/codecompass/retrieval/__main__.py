"""`python -m codecompass.retrieval`: serve RetrievalService until SIGTERM.

Health is NOT_SERVING until the state dir is known to be writable. It does not wait for the
analysis or embedding services: they may start after this one, every request reaches them
with a deadline, and a request that cannot reach them fails with UNAVAILABLE naming the
address, which tells the caller more than a service that never becomes SERVING.
"""

from __future__ import annotations

import sys

import grpc

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common import names
from codecompass.common.config import ConfigError, load_settings
from codecompass.common.logging import configure_logging, get_logger
from codecompass.common.serving import ServiceSpec, serve_forever
from codecompass.common.telemetry import init_telemetry
from codecompass.retrieval import servicer
from codecompass.retrieval.engine import RetrievalEngine


def main() -> int:
    log = get_logger("codecompass.retrieval")
    try:
        configure_logging(names.RETRIEVAL)
        settings = load_settings()
        # Once the settings say where metrics go; still before any server or client exists.
        init_telemetry(names.RETRIEVAL, metrics_port=settings.metrics_port(names.RETRIEVAL),
                       metrics_host=settings.bind_host)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    analysis = AnalysisClient(settings.analysis_addr, timeout_s=settings.rpc_timeout_s)
    embedding = EmbeddingClient(
        settings.embedding_addr, timeout_s=settings.rpc_timeout_s, batch_size=settings.embedding.batch_size
    )
    engine = RetrievalEngine(settings, analysis, embedding)

    def register(server: grpc.Server) -> list[str]:
        return servicer.register(server, engine)

    try:
        return serve_forever(
            ServiceSpec(name=names.RETRIEVAL, register=register, warmup=engine.warmup,
                        after_serving=engine.after_serving, scaled_out=settings.retrieval.role == "searcher",
                        reflection=settings.grpc_reflection),
            host=settings.bind_host, port=settings.retrieval_port,
            grace_s=settings.shutdown_grace_s, transport=settings.grpc,
        )
    finally:
        engine.close()
        analysis.close()
        embedding.close()


if __name__ == "__main__":
    sys.exit(main())
