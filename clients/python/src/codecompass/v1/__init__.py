"""The generated stubs of the `codecompass.v1` protos (grpcio-tools: `make proto`).

`__version__` is the protos' version (protos/VERSION), stamped by codecompass_dev.client_version:
the version of the `codecompass-client` distribution too."""

__version__ = "1.0.0"
