"""The client package follows a restarted service (issue 15 §1): real retrieval processes, killed
with -9 and started again, and one `RetrievalClient` made before the restart.

Calls go through `codecompass.clients.channel.ServiceChannel`, as every client's do."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from codecompass.clients.errors import UNAVAILABLE, ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import IndexingStatus

TIMEOUT_S = 10.0


def _kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def _retrieval(start_python_service, state: Path, port: int = 0) -> tuple[subprocess.Popen, str]:
    return start_python_service("codecompass.retrieval", {"CODECOMPASS_STATE_DIR": str(state),
                                                          "RETRIEVAL_PORT": str(port)})


def test_a_client_follows_its_resolver_to_a_service_restarted_on_a_new_port(start_python_service,
                                                                            tmp_path: Path) -> None:
    first, first_address = _retrieval(start_python_service, tmp_path / "state")
    where = {"retrieval": first_address}
    client = RetrievalClient(lambda: where["retrieval"])
    try:
        assert client.status(str(tmp_path), TIMEOUT_S).indexing_status is IndexingStatus.NOT_INDEXED
        _kill(first)
        with pytest.raises(ServiceError) as down:
            client.status(str(tmp_path), TIMEOUT_S)
        assert down.value.kind == UNAVAILABLE and down.value.address == first_address

        _, second_address = _retrieval(start_python_service, tmp_path / "state")
        assert second_address != first_address
        where["retrieval"] = second_address  # what `codecompass up` writes to runtime.json
        assert client.status(str(tmp_path), TIMEOUT_S).indexing_status is IndexingStatus.NOT_INDEXED
        assert client.address == second_address
    finally:
        client.close()


def test_the_first_call_after_a_restart_on_the_same_port_answers(start_python_service, tmp_path: Path) -> None:
    first, address = _retrieval(start_python_service, tmp_path / "state")
    client = RetrievalClient(address)
    try:
        client.status(str(tmp_path), TIMEOUT_S)
        _kill(first)
        # Calls while it is down leave the channel in reconnect backoff.
        for _ in range(3):
            with pytest.raises(ServiceError):
                client.status(str(tmp_path), TIMEOUT_S)
        _retrieval(start_python_service, tmp_path / "state", port=int(address.rpartition(":")[2]))
        assert client.status(str(tmp_path), TIMEOUT_S).indexing_status is IndexingStatus.NOT_INDEXED
    finally:
        client.close()
