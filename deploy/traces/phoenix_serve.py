"""`phoenix serve` with its OTLP/gRPC collector on the loopback address only.

Runs in Phoenix's own venv (.venv-traces), not the services' (`run.py` starts it). Phoenix
20.26 binds the web UI and OTLP/HTTP to PHOENIX_HOST but its OTLP/gRPC collector to `[::]`
whatever PHOENIX_HOST says (phoenix/server/grpc_server.py): a dashboard on a laptop would take
spans from the whole network. The collector's server is made by `grpc.aio.server`, so the port
it adds is rewritten to PHOENIX_HOST here, before Phoenix imports it. `run.py` checks that
nothing listens on the gRPC port outside the loopback range afterwards, so a Phoenix that
binds another way fails loudly instead of listening on the network.
"""

from __future__ import annotations

import os
import sys

import grpc.aio

_ANY_ADDRESS = "[::]:"
_make_server = grpc.aio.server


def _loopback_server(*args, **kwargs):
    server = _make_server(*args, **kwargs)
    host = os.environ["PHOENIX_HOST"]
    add_insecure, add_secure = server.add_insecure_port, server.add_secure_port

    def local(address: str) -> str:
        return address.replace(_ANY_ADDRESS, f"{host}:", 1) if address.startswith(_ANY_ADDRESS) else address

    server.add_insecure_port = lambda address: add_insecure(local(address))
    server.add_secure_port = lambda address, credentials: add_secure(local(address), credentials)
    return server


grpc.aio.server = _loopback_server

if __name__ == "__main__":
    from phoenix.server.main import main

    sys.argv = ["phoenix", *sys.argv[1:]]
    main()
