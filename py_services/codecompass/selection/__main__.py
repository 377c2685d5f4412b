"""`python -m codecompass.selection`: serve SelectionService on SELECTION_PORT.

Warmup loads the tokenizer (every answer is counted with it), then health turns SERVING. The
analysis service is not needed to get ready: while it is away, answers come from the stored
collapsed source with `render_fallback` set.
"""

from __future__ import annotations

import sys

from codecompass.common import names
from codecompass.common.config import ConfigError, load_settings
from codecompass.common.logging import configure_logging, get_logger
from codecompass.common.serving import ServiceSpec, serve_forever
from codecompass.common.telemetry import init_telemetry, shutdown_telemetry
from codecompass.common.tokens import count_tokens
from codecompass.selection.engine import SelectionEngine
from codecompass.selection.render_client import RenderClient
from codecompass.selection.servicer import SelectionServicer, register


def warm_up() -> None:
    count_tokens("warm up the tokenizer")


def main() -> int:
    log = get_logger("codecompass.selection")
    try:
        configure_logging(names.SELECTION)
        settings = load_settings()
        # Once the settings say where metrics go; still before any server or client exists.
        init_telemetry(names.SELECTION, metrics_port=settings.metrics_port(names.SELECTION),
                       metrics_host=settings.bind_host)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        print(f"error: {exc}", file=sys.stderr, flush=True)
        shutdown_telemetry()
        return 2
    selection = settings.selection
    log.info("selection defaults", extra={"max_tokens": selection.max_tokens, "min_relevance": selection.min_relevance,
                                          "analysis_addr": settings.analysis_addr})
    renderer = RenderClient(settings.analysis_addr, timeout_s=selection.render_timeout_s)
    spec = ServiceSpec(name=names.SELECTION,
                       register=register(SelectionServicer(SelectionEngine(selection, renderer))), warmup=warm_up,
                       reflection=settings.grpc_reflection)
    try:
        return serve_forever(spec, host=settings.bind_host, port=settings.selection_port,
                             grace_s=settings.shutdown_grace_s, transport=settings.grpc)
    finally:
        renderer.close()


if __name__ == "__main__":
    sys.exit(main())
