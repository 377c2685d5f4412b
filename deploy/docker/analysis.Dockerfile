# codecompass/analysis: the TypeScript analysis service (`node dist/src/main.js`, port 50051).
#   docker build -f deploy/docker/analysis.Dockerfile -t localhost/codecompass/analysis:0.1.0 .   # from the repo root

# Pinned by tag: Node.js 24, an LTS line supported until 2028-04-30 (20, which `make setup` still
# runs the tests on, reached its end of life on 2026-04-30; tests/deploy/test_images.py fails once
# this line passes its own). Renovate (.github/renovate.json) keeps the tag current within LTS
# lines and pins its digest (node:24.x-bookworm-slim@sha256:…), so that a rebuild of one commit
# gets the same base.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# `npm ci`: exactly the lock file. (The Makefile uses `npm install` only because some registry
# mirrors lack @bufbuild/buf's binaries for other platforms; the lock lists them all and the
# public registry has them.) --ignore-scripts: no package needs its install script here (buf's
# checks its binary, protobufjs's checks its CLI's), and a build runs no code it need not.
COPY node_ts_service/package.json node_ts_service/package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
# The sources, with the generated stubs committed in src/gen: the image never runs buf. The
# tests are not in the build context, so tsc compiles src alone.
COPY node_ts_service/tsconfig.json ./
COPY node_ts_service/src src
# The stubs, generated once into the TypeScript client package (buf.gen.yaml): src/gen/codecompass
# and src/gen/google are links to ../../../clients/typescript/src/gen/..., which from /app/src/gen
# is this path; tsc (preserveSymlinks) compiles them into dist/src/gen as in a checkout.
COPY clients/typescript/src/gen /clients/typescript/src/gen
# Then the dev dependencies (the compiler's type packages, buf, ts-proto) go: the runtime stage
# takes node_modules as production needs it (typescript stays: the service runs its compiler).
RUN node_modules/.bin/tsc -p tsconfig.json \
    && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="codecompass/analysis" \
      org.opencontainers.image.description="CodeCompass analysis service: TypeScript compiler Programs, chunking and rendering over gRPC" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"

# uid/gid 10001, as in codecompass/python; the service writes nothing but to stdout/stderr
# (and CODECOMPASS_TRACE_FILE when set), so it has no home.
RUN groupadd --system --gid 10001 codecompass \
    && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin codecompass

WORKDIR /app
# Root-owned, read-only to the service: the compiled sources and production dependencies only.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist/src dist/src
# The V8 code cache of the TypeScript compiler (src/compileCache.ts), made by this image's own Node:
# every start, and each of its worker threads, loads the compiler from it (~60 ms instead of ~190 ms
# of CPU each). Root-owned like the rest: the service reads it and writes nothing there.
RUN node dist/src/primeCompileCache.js

ENV NODE_ENV=production \
    CODECOMPASS_BIND_HOST=0.0.0.0
USER 10001:10001
EXPOSE 50051
# main.ts drains on SIGTERM itself (NOT_SERVING, tryShutdown within ANALYSIS_SHUTDOWN_GRACE_MS,
# flush telemetry, exit 0), as PID 1 too: its handlers are installed before it serves, and it
# starts no child processes (the type checker is a worker thread). compose adds an init anyway.
STOPSIGNAL SIGTERM
# The contract's check: grpc.health.v1 over loopback, SERVING only once warmed up. A deployment
# that moves ANALYSIS_PORT states its own check (compose does, for every service); Kubernetes
# probes gRPC natively instead.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "dist/src/healthcheck.js", "127.0.0.1:50051"]
CMD ["node", "dist/src/main.js"]
