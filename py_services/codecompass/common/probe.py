"""The services' container health probe (deploy/compose.yaml):

    python -m codecompass.common.probe HOST:PORT [--service NAME] [--timeout S]
    python -m codecompass.common.probe http://HOST:PORT/healthz [--timeout S]

The client package's health check (codecompass.clients.health, same arguments and exit codes),
dialled as this container's `grpc` settings say: importing the settings registers them as the
clients' default transport (common/config), so a service serving TLS is probed over TLS. The
client package alone cannot read the services' settings, and must not.
"""

from __future__ import annotations

import sys

import codecompass.common.config  # noqa: F401 - registers the settings' transport as the clients' default
from codecompass.clients import health

if __name__ == "__main__":
    sys.exit(health.main(prog="python -m codecompass.common.probe"))
