"""`python -m codecompass.rerank`: serve RerankService on RERANK_PORT.

Nothing heavy to load: warmup only checks that the configured provider can
run (so a missing key fails at start with the variable's name) and builds the
engine; health turns SERVING after it. External providers are reached only
when both privacy gates are open; otherwise every request gets the local
first-stage scores and `fallback_reason = "external_provider_blocked"`.
"""

from __future__ import annotations

import sys

from codecompass.common import names
from codecompass.common.config import ConfigError, RerankSettings, load_settings
from codecompass.common.logging import configure_logging, get_logger
from codecompass.common.serving import ServiceSpec, serve_forever
from codecompass.common.telemetry import init_telemetry, shutdown_telemetry
from codecompass.rerank.engine import RerankEngine
from codecompass.rerank.servicer import RerankServicer, register


def check_settings(settings: RerankSettings) -> None:
    """Refuse a configured external provider that could never run, naming the variable to set."""
    if settings.provider == "local" or not settings.external_allowed:
        return
    if settings.provider in ("voyage", "cohere") and not settings.api_key:
        raise ConfigError(f"CODECOMPASS_RERANK_API_KEY: required when CODECOMPASS_RERANK_PROVIDER={settings.provider}")
    if settings.provider == "llm" and not (settings.base_url and settings.model):
        raise ConfigError("CODECOMPASS_RERANK_BASE_URL and CODECOMPASS_RERANK_MODEL: required when "
                          "CODECOMPASS_RERANK_PROVIDER=llm")


def main() -> int:
    log = get_logger("codecompass.rerank")
    try:
        configure_logging(names.RERANK)
        settings = load_settings()
        # Once the settings say where metrics go; still before any server or client exists.
        init_telemetry(names.RERANK, metrics_port=settings.metrics_port(names.RERANK),
                       metrics_host=settings.bind_host)
        check_settings(settings.rerank)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        print(f"error: {exc}", file=sys.stderr, flush=True)
        shutdown_telemetry()
        return 2
    log.info("rerank provider", extra={"provider": settings.rerank.provider,
                                       "external_allowed": settings.rerank.external_allowed})
    spec = ServiceSpec(name=names.RERANK, register=register(RerankServicer(RerankEngine(settings.rerank))),
                       scaled_out=True, reflection=settings.grpc_reflection)
    return serve_forever(spec, host=settings.bind_host, port=settings.rerank_port, grace_s=settings.shutdown_grace_s,
                         transport=settings.grpc)


if __name__ == "__main__":
    sys.exit(main())
