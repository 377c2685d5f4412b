"""The local services `codecompass up` runs: one row per service.

Adding a service is one ``ServiceDef`` line. Each gets ``<NEED>_ADDR`` of the
ones it ``needs``: `up` reserves their ports first, so all start together; a
service whose need's address is not known before it listens starts after it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass

from codecompass.common import names
from codecompass.common.config import CHECKOUT_ROOT, Settings

NODE_ENTRY = CHECKOUT_ROOT / "node_ts_service" / "dist" / "src" / "main.js"


class ServiceUnavailable(Exception):
    """A service cannot be started from this checkout; the message says how to fix it."""


@dataclass(frozen=True)
class ServiceDef:
    name: str  # its one name (codecompass.common.names)
    argv: Callable[[], list[str]]
    health_service: str  # the gRPC contract whose health `up` and `status` check
    needs: tuple[str, ...] = ()
    # Whether `up` runs it under these settings, and if not, why not (for `up` and `status`).
    unneeded: Callable[[Settings], str | None] = lambda settings: None

    @property
    def port_env(self) -> str:
        return names.port_env(self.name)


def _node_argv() -> list[str]:
    if not NODE_ENTRY.is_file():
        raise ServiceUnavailable(f"analysis service is not built ({NODE_ENTRY} missing); run `make setup`")
    return ["node", str(NODE_ENTRY)]


def _python_argv(module: str) -> Callable[[], list[str]]:
    def argv() -> list[str]:
        if importlib.util.find_spec(module) is None or importlib.util.find_spec(f"{module}.__main__") is None:
            raise ServiceUnavailable(f"{module} is not installed in {sys.prefix}; run `make setup`")
        return [sys.executable, "-m", module]

    return argv


SERVICES: tuple[ServiceDef, ...] = (
    ServiceDef(names.ANALYSIS, _node_argv, "codecompass.v1.CodeAnalysisService"),
    ServiceDef(names.EMBEDDING, _python_argv("codecompass.embedding"), "codecompass.v1.EmbeddingService"),
    ServiceDef(names.RETRIEVAL, _python_argv("codecompass.retrieval"), "codecompass.v1.RetrievalService",
               needs=(names.ANALYSIS, names.EMBEDDING)),
    # Started only when a query can use a model reranker: with the local default it would never be
    # called, and its start was 0.4 s of CPU that a cold start on two cores waited for.
    ServiceDef(names.RERANK, _python_argv("codecompass.rerank"), "codecompass.v1.RerankService",
               unneeded=lambda settings: None if settings.rerank.needs_service else
               "the local reranker (rerank.provider) runs inside retrieval"),
    ServiceDef(names.SELECTION, _python_argv("codecompass.selection"), "codecompass.v1.SelectionService",
               needs=(names.ANALYSIS,)),
)
SERVICES_BY_NAME = {svc.name: svc for svc in SERVICES}


def needed(settings: Settings) -> tuple[ServiceDef, ...]:
    """The services `up` runs under `settings`."""
    return tuple(svc for svc in SERVICES if svc.unneeded(settings) is None)


def start_waves(services: tuple[ServiceDef, ...] = SERVICES, known: set[str] | frozenset[str] = frozenset()
                ) -> list[list[ServiceDef]]:
    """Group services into waves that can start in parallel, in dependency order: a service starts
    with the first wave after those it needs, unless their addresses are `known` before they listen
    (ports reserved up front), when it starts with them."""
    waves: list[list[ServiceDef]] = []
    placed: set[str] = set()
    pending = list(services)
    while pending:
        wave = [svc for svc in pending if set(svc.needs) <= placed | set(known)]
        if not wave:
            raise ValueError(f"service dependency cycle among {[svc.name for svc in pending]}")
        waves.append(wave)
        placed.update(svc.name for svc in wave)
        pending = [svc for svc in pending if svc.name not in placed]
    return waves
