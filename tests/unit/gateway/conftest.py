from __future__ import annotations

import dataclasses

import pytest

from codecompass.common.config import Settings, load_settings


@pytest.fixture
def dead_services(free_port: int) -> Settings:
    """Settings whose every service address is a port nothing listens on."""
    dead = f"127.0.0.1:{free_port}"
    return dataclasses.replace(load_settings(), retrieval_addr=dead, rerank_addr=dead, selection_addr=dead,
                               analysis_addr=dead)
