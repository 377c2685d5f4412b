# CodeCompass developer entry points. `make run` and `make test` are all a
# fresh clone needs (Python 3.11 and Node 20 on PATH); every other target is
# for working on the code.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

PYTHON ?= python3.11
VENV := .venv
NODE_DIR := node_ts_service
NODE_BIN := $(CURDIR)/$(NODE_DIR)/node_modules/.bin
BUF := PATH="$(NODE_BIN):$$PATH" $(NODE_BIN)/buf
WORKSPACE ?= tests/fixtures/sample_workspace
CLIENT_PY := clients/python
CLIENT_TS := clients/typescript
# What `make proto` writes: the stubs of both languages, the versions it stamps on the client
# packages (protos/VERSION), the Node service's reflection descriptors, the API reference.
GENERATED := $(CLIENT_PY)/src/codecompass/v1 $(CLIENT_TS)/src/gen $(CLIENT_TS)/package.json $(NODE_DIR)/src/gen docs/api.md
LINT_PY_DIRS := $(wildcard py_services tests gateway_mcp codecompass_dev bench models deploy $(CLIENT_PY))

# Stamps make `setup` a no-op when nothing it depends on changed.
VENV_STAMP := $(VENV)/.stamp
NODE_MODULES_STAMP := $(NODE_DIR)/node_modules/.stamp
NODE_BUILD_STAMP := $(NODE_DIR)/dist/.stamp
CLIENT_TS_MODULES_STAMP := $(CLIENT_TS)/node_modules/.stamp
NODE_SOURCES := $(shell find $(NODE_DIR)/src $(NODE_DIR)/test -name '*.ts' -not -path '*/fixtures/*' 2>/dev/null)
# Folders too: adding or deleting a file changes its folder's mtime.
NODE_SOURCE_DIRS := $(shell find $(NODE_DIR)/src $(NODE_DIR)/test -type d 2>/dev/null)

.PHONY: setup proto proto-check lint test run client-packages bench-corpus bench-chunk bench-quality bench-speed bench-embed bench-cold \
	bench-report bench-models bench-candidates bench-pipeline bench-pipeline-speed bench-render-speed bench-shard-speed bench-store-speed bench-health bench-index-stages bench-index-1m bench-index-size bench-edit-visible bench-mcp bench-badinput bench-load bench-drills \
	code-static code-static-bundle code-small code-small-bundle corpus ranker ranker-code-static traces traces-down traces-screenshot metrics-screenshot image-lock

setup: $(VENV_STAMP) $(NODE_BUILD_STAMP) $(CLIENT_TS_MODULES_STAMP)
	# Our sources' bytecode now (only what changed is compiled again): pip compiles the packages it
	# installs, not an editable checkout, and each service start would compile ours again wherever
	# bytecode is not written (PYTHONDONTWRITEBYTECODE), 0.1 s of CPU per process.
	$(VENV)/bin/python -m compileall -q $(CLIENT_PY)/src py_services/codecompass gateway_mcp/codecompass_cli gateway_mcp/codecompass_gateway

# The client distribution first on the line: the services' one depends on it, and pip takes this
# checkout's copy rather than looking for it on an index.
$(VENV_STAMP): $(CLIENT_PY)/pyproject.toml py_services/pyproject.toml gateway_mcp/pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -e $(CLIENT_PY) -e 'py_services[dev,models]' -e gateway_mcp
	# Export the default embedding model to ONNX now (~7 s) rather than on the
	# embedding service's first start, which has a 3 s budget.
	$(VENV)/bin/python -m codecompass.embedding.minilm_onnx
	touch $@

# `npm install` rather than `npm ci`: it installs the locked versions just the
# same, but `npm ci` also demands lock entries for @bufbuild/buf's binaries for
# other platforms, which registry mirrors without them cannot provide.
$(NODE_MODULES_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm install --no-audit --no-fund
	touch $@

# A clean build, so compiled tests of deleted sources never linger in dist/.
# Then the V8 code cache of the TypeScript compiler, as compileall does for Python (src/compileCache.ts):
# each start of the service loads it from there in every thread instead of compiling 9 MB of JS.
$(NODE_BUILD_STAMP): $(NODE_MODULES_STAMP) $(NODE_DIR)/tsconfig.json $(NODE_SOURCES) $(NODE_SOURCE_DIRS)
	rm -rf $(NODE_DIR)/dist $(NODE_DIR)/.cache
	cd $(NODE_DIR) && $(NODE_BIN)/tsc -p .
	cd $(NODE_DIR) && node dist/src/primeCompileCache.js
	touch $@

$(CLIENT_TS_MODULES_STAMP): $(CLIENT_TS)/package.json $(CLIENT_TS)/package-lock.json
	cd $(CLIENT_TS) && npm install --no-audit --no-fund
	touch $@

# The client packages as a program installs them (clients/*/README.md), into dist/:
# codecompass_client-<version>-py3-none-any.whl and codecompass-client-<version>.tgz (`npm pack`
# compiles the TypeScript first). No build isolation: the venv's setuptools builds the wheel offline.
# setuptools builds in the source tree: its build/ folder goes first, or a module deleted since the
# last build would ship again.
client-packages: $(VENV_STAMP) $(CLIENT_TS_MODULES_STAMP)
	mkdir -p dist
	rm -rf $(CLIENT_PY)/build
	$(VENV)/bin/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir dist $(CLIENT_PY)
	cd $(CLIENT_TS) && npm pack --silent --pack-destination $(CURDIR)/dist

proto: $(VENV_STAMP) $(NODE_MODULES_STAMP)
	$(BUF) generate
	# The Node service's reflection answers from the protos' descriptors (its stubs carry none).
	$(BUF) build --as-file-descriptor-set -o $(NODE_DIR)/descriptors.binpb
	$(VENV)/bin/python -m codecompass_dev.descriptors $(NODE_DIR)/descriptors.binpb $(NODE_DIR)/src/gen/descriptors.ts
	# The API reference is the protos' doc comments laid out, checked with the stubs.
	$(VENV)/bin/python -m codecompass_dev.api_reference $(NODE_DIR)/descriptors.binpb docs/api.md
	rm $(NODE_DIR)/descriptors.binpb
	$(VENV)/bin/python -m grpc_tools.protoc -Iprotos --python_out=$(CLIENT_PY)/src --pyi_out=$(CLIENT_PY)/src \
		--grpc_python_out=$(CLIENT_PY)/src protos/codecompass/v1/*.proto
	# One version for the protos and both client packages.
	$(VENV)/bin/python -m codecompass_dev.client_version

# Fails when the committed stubs differ from what the protos generate.
proto-check: proto
	git diff --exit-code -- $(GENERATED)
	@untracked="$$(git ls-files --others --exclude-standard -- $(GENERATED))"; \
	if [ -n "$$untracked" ]; then echo "untracked generated files:"; echo "$$untracked"; exit 1; fi

# The protos' last release, as a buf image: `buf breaking` fails on any change a v1 client built
# against it would break on. A release replaces it: `buf build --exclude-source-info -o protos/releases/vX.Y.Z.binpb`.
PROTO_RELEASE := protos/releases/v0.1.0.binpb

lint: $(VENV_STAMP) $(NODE_MODULES_STAMP) $(CLIENT_TS_MODULES_STAMP)
	$(BUF) lint
	$(BUF) format -d --exit-code
	$(BUF) breaking --against $(PROTO_RELEASE)
	$(VENV)/bin/ruff check $(LINT_PY_DIRS)
	$(VENV)/bin/mypy
	cd $(NODE_DIR) && $(NODE_BIN)/tsc -p . --noEmit
	cd $(NODE_DIR) && $(NODE_BIN)/eslint .
	# The TypeScript client package: its sources with its example, compiled as a user's program would.
	cd $(CLIENT_TS) && node_modules/.bin/tsc -p tsconfig.examples.json
	cd $(CLIENT_TS) && node_modules/.bin/eslint .

test: setup
	$(BUF) lint
	cd $(NODE_DIR) && node --test dist/test/
	$(VENV)/bin/pytest -q

# The Python image's run-time packages, pinned with their hashes for both architectures it is
# built for (deploy/docker/lock.py says what is in it and why); needs PyPI. Run it after changing a
# run-time pin in py_services/ or gateway_mcp/pyproject.toml: tests/deploy checks the two agree.
image-lock: $(VENV_STAMP)
	$(VENV)/bin/python deploy/docker/lock.py

run: setup
	$(VENV)/bin/codecompass run --workspace $(WORKSPACE)

# A trace dashboard (README: Traces in a browser): Arize Phoenix in its own venv, pinned apart
# from the services' (deploy/traces/constraints.txt), the services exporting to it, one
# semantic_search through the MCP gateway; runs until Ctrl-C. State in <state_dir>/traces.
TRACES_VENV := .venv-traces
TRACES_STAMP := $(TRACES_VENV)/.stamp
$(TRACES_STAMP): deploy/traces/requirements.txt deploy/traces/constraints.txt
	test -x $(TRACES_VENV)/bin/python || $(PYTHON) -m venv $(TRACES_VENV)
	$(TRACES_VENV)/bin/pip install --quiet -r deploy/traces/requirements.txt -c deploy/traces/constraints.txt
	touch $@

traces: setup $(TRACES_STAMP)
	$(VENV)/bin/python deploy/traces/run.py --workspace $(WORKSPACE)

traces-down:
	$(VENV)/bin/python deploy/traces/run.py down

# docs/traces/*.png from a fresh trace of the sample workspace, by headless Chromium (Debian's
# package: a browser downloaded by a tool would be a binary from outside the registries).
traces-screenshot: setup $(TRACES_STAMP)
	command -v chromium >/dev/null || { apt-get update && apt-get install -y chromium; }
	$(VENV)/bin/python deploy/traces/run.py screenshot

# docs/metrics/*.png: the dashboard's queries and the alert rules in a real Prometheus over a real
# run, by headless Chromium (Debian's packages, as for the traces; no Grafana comes from the
# registries). promtool checks the rules first.
metrics-screenshot: setup
	command -v prometheus >/dev/null && command -v chromium >/dev/null || \
		{ apt-get update && apt-get install -y --no-install-recommends prometheus chromium; }
	$(VENV)/bin/python deploy/observability/screenshot.py

# Benchmarks print markdown tables (bench/README.md explains every number); the quality bench
# writes a results file that `bench-report` turns into the README tables.
# The corpus is pinned npm packages, installed into bench/.corpus (gitignored).
bench-corpus: setup
	codecompass_dev/corpus/install.sh
	$(VENV)/bin/python -m codecompass_dev.corpus.assemble all

bench-chunk: bench-corpus
	$(VENV)/bin/python -m bench.chunk_bench
	node bench/chunk_bench_node.js --repeat 3
	$(VENV)/bin/python -m bench.report

# Builds the workspaces + query set, writes bench/results/quality-<UTC>.json, refreshes the
# README tables. QUALITY_STATE_DIR keeps the indexes between runs (a rerun only re-syncs).
QUALITY_STATE_DIR ?= bench/.work/quality-state
SPLIT ?= dev
bench-quality: bench-corpus
	$(VENV)/bin/python -m bench.quality.build_queries
	$(VENV)/bin/python -m bench.quality.run_quality --state-dir $(QUALITY_STATE_DIR)
	$(VENV)/bin/python -m bench.quality.tune_ranking --state-dir $(QUALITY_STATE_DIR)
	$(VENV)/bin/python -m bench.report

# Our embedding models side by side (issue 16): one quality run per other profile, each with its
# own index and results folder (the default profile's run is bench/results/quality-latest.json,
# from bench-quality), then one table per split: BM25 alone, each model's vectors alone, each
# model in the hybrid. DEFAULT_PROFILE names the default's row; it must match embedding.profile.
DEFAULT_PROFILE := code-small
MODEL_PROFILES ?= minilm code-static
bench-models: bench-corpus
	$(VENV)/bin/python -m bench.quality.build_queries
	for profile in $(MODEL_PROFILES); do \
		CODECOMPASS_EMBEDDING_PROFILE=$$profile $(VENV)/bin/python -m bench.quality.run_quality \
			--state-dir bench/.work/quality-state-$$profile --results-dir bench/results/models/$$profile || exit 1; \
	done
	$(VENV)/bin/python -m bench.quality.compare_models --run "$(DEFAULT_PROFILE) (default)=bench/results/quality-latest.json" \
		$(foreach profile,$(MODEL_PROFILES),--run $(profile)=bench/results/models/$(profile)/quality-latest.json)
	$(VENV)/bin/python -m bench.report

# Rewrites the generated sections of README.md and bench/README.md from bench/results/*-latest.json.
bench-report:
	$(VENV)/bin/python -m bench.report

# Offline ranking work: bench/.work/candidates-$(SPLIT).jsonl, 200 first-stage candidates per query.
bench-candidates: setup
	$(VENV)/bin/python -m bench.quality.dump_candidates --split $(SPLIT) --state-dir $(QUALITY_STATE_DIR)

# The whole pipeline per stage on the quality workspaces (reuses the quality run's indexes). The
# confidence model it relies on is refit with the ranker (`make ranker`: models/ranker/calibrate.py).
bench-pipeline: bench-corpus
	$(VENV)/bin/python -m bench.quality.run_pipeline --state-dir $(QUALITY_STATE_DIR)
	$(VENV)/bin/python -m bench.report

# The pipeline's latency per stage on ws-300k (indexes it once into bench/.work/pipeline-speed-state).
bench-pipeline-speed: bench-corpus
	$(VENV)/bin/python -m bench.speed.run_pipeline_speed
	$(VENV)/bin/python -m bench.report

# ws-300k indexed by 1, 2 and 3 worker processes (retrieval/index/shard/), on local disk and on a local
# S3 server (moto), plus today's single-process sync for comparison.
bench-shard-speed: bench-corpus
	$(VENV)/bin/python -m bench.speed.run_shard_speed --baseline
	$(VENV)/bin/python -m bench.report

# The select stage with and without renderings from the index, on grpc-js (indexes in about a minute).
bench-render-speed: setup
	$(VENV)/bin/python -m bench.speed.run_render_speed
	$(VENV)/bin/python -m bench.report

bench-store-speed: bench-corpus
	$(VENV)/bin/python -m bench.speed.run_store_speed
	$(VENV)/bin/python -m bench.report

# Load on every service run apart (one writer, two searchers, the gateway over HTTP with its token):
# a concurrency sweep and the 50-client target run on ws-300k, about 6 minutes (bench/load.py).
bench-load: bench-corpus
	$(VENV)/bin/python -m bench.load
	$(VENV)/bin/python -m bench.report

# Failure drills: a searcher, the embedding service and the writer killed, the object store down.
bench-drills: setup
	$(VENV)/bin/python -m bench.drills
	$(VENV)/bin/python -m bench.report

# MCP tool-call latency on ws-300k and cold start of `codecompass mcp`.
bench-mcp: bench-corpus
	$(VENV)/bin/python -m bench.speed.run_mcp_speed
	$(VENV)/bin/python -m bench.report

# The first answer on a never-indexed workspace from services down (fastify, 78k lines), 3 runs.
bench-cold: bench-corpus
	$(VENV)/bin/python -m bench.speed.cold_start
	$(VENV)/bin/python -m bench.report

bench-speed: bench-corpus
	$(VENV)/bin/python -m bench.speed.run_speed
	$(VENV)/bin/python -m bench.report

# Where the seconds of a cold ws-300k index go, stage by stage, until READY.
bench-index-stages: bench-corpus
	$(VENV)/bin/python -m bench.speed.index_stages
	$(VENV)/bin/python -m bench.report

# The same on ws-1m (1M lines of the training corpus's repositories; needs their mirrors in
# $$BENCH_MIRRORS): with the static model as the primary, READY is every chunk at its final vectors.
bench-index-1m:
	BENCH_MIRRORS=$${BENCH_MIRRORS:?the corpus mirrors, see DEVELOPERS.md} $(VENV)/bin/python -m codecompass_dev.corpus.assemble ws-1m
	CODECOMPASS_EMBEDDING_PROFILE=code-static $(VENV)/bin/python -m bench.speed.index_stages --workspace bench/.work/ws-1m --kind index-stages-1m
	$(VENV)/bin/python -m bench.report

# Where the bytes of a ws-300k index go: settled size and peak while indexing, against the source;
# then what the static vectors' 4 bits cost a search, on that index.
bench-index-size: bench-corpus
	rm -rf bench/.work/index-size-state
	$(VENV)/bin/python -m bench.index_size --workspace bench/.work/ws-300k --state-dir bench/.work/index-size-state
	$(VENV)/bin/python -m bench.vector_fidelity --workspace bench/.work/ws-300k --state-dir bench/.work/index-size-state
	$(VENV)/bin/python -m bench.report

# A one-file edit on a READY ws-300k: the sync and the search right after it, until the edit is found.
bench-edit-visible: bench-corpus
	$(VENV)/bin/python -m bench.speed.edit_visible
	$(VENV)/bin/python -m bench.report

# The analysis service's health and RenderSymbols latency while it chunks ws-300k cold.
bench-health: bench-corpus
	$(VENV)/bin/python -m bench.speed.health_during_index
	$(VENV)/bin/python -m bench.report

bench-embed: setup
	$(VENV)/bin/python -m bench.embed_bench

# The training corpus (issue 16): every repository of models/corpus/manifest.json checked out at
# its pinned commit under models/.work/corpus/, copies of the benchmark's dev/test code removed and
# files repeated across repositories kept once (models/.work/corpus/dedup.json). Mirrors are looked
# up in $BENCH_MIRRORS; models/corpus/select.py is the rule that wrote the manifest.
corpus: setup
	$(VENV)/bin/python -m models.corpus.build

# The code-static embedding model (issues 16, 27) from the training corpus's train repositories
# (checked out by `make corpus`), taught by the committed code-small model: models/code_static/model/
# and its log training.json; about 40 minutes on 2 cores with the default 32,000 refinement chunks
# (most of it code-small embedding them). More chunks are for an accelerator: `make
# code-static-bundle CODE_STATIC_TEXTS=N` packs their token ids, models/code_static/teacher.py embeds
# them there, and `make code-static CODE_STATIC_TEXTS=N CODE_STATIC_PARTS=DIR` joins the vectors into
# the training's cache (DEVELOPERS.md). models/code_static/MODEL_CARD.md explains every step and number.
CODE_STATIC_TEXTS ?= 32000
CODE_STATIC_PARTS ?=
CODE_STATIC_BUNDLE ?= models/.work/code_static/bundle
code-static: setup
	$(if $(CODE_STATIC_PARTS),$(VENV)/bin/python -m models.code_static.teacher unpack $(CODE_STATIC_BUNDLE) $(CODE_STATIC_PARTS))
	$(VENV)/bin/python -m models.code_static.train --refine-texts $(CODE_STATIC_TEXTS)

code-static-bundle: setup
	$(VENV)/bin/python -m models.code_static.teacher pack $(CODE_STATIC_BUNDLE) --refine-texts $(CODE_STATIC_TEXTS)

# The code-small embedding model (issue 16): all-MiniLM-L6-v2 fine-tuned on the corpus's mined
# pairs (after `make corpus`) with in-batch and same-repository hard negatives, exported to int8
# ONNX and validated on the held-out repositories: models/code_small/model/, training.json,
# validation.json. The cpu config takes about 45 minutes on 2 cores; CODE_SMALL_CONFIG=full is
# for an accelerator: `make code-small-bundle` packs it, models/code_small/fit.py trains it there,
# and `make code-small CODE_SMALL_CONFIG=full CODE_SMALL_PARTS=DIR` takes the weights back
# (DEVELOPERS.md). models/code_small/MODEL_CARD.md explains every step and number.
CODE_SMALL_CONFIG ?= cpu
CODE_SMALL_PARTS ?=
CODE_SMALL_BUNDLE ?= models/.work/code_small/bundle-device
code-small: setup
	$(VENV)/bin/python -m models.code_small.train --config $(CODE_SMALL_CONFIG) $(if $(CODE_SMALL_PARTS),--from-parts $(CODE_SMALL_PARTS))
	$(VENV)/bin/python -m models.code_small.export

code-small-bundle: setup
	$(VENV)/bin/python -m models.code_small.train --config $(CODE_SMALL_CONFIG) --pack-only $(CODE_SMALL_BUNDLE)

# The bad-input suite (issue 10): exactly the tests marked `badinput` across tests/, each case's
# behaviour and outcome, and the tracebacks seen in any output, into
# bench/results/badinput-<UTC>.json; then the README table. Fails when a case or a traceback does,
# after the table shows which.
# The learned ranker (issue 17): the corpus's held-out train repositories (those no embedding model
# learned from) indexed as a user has them (models/.work/ranker/), their first-stage candidates and
# the benchmark's dev/test ones dumped as features, then LightGBM LambdaRank trained on train,
# early-stopped on dev, reported on test: models/ranker/model.txt (what retrieval loads) and
# models/ranker/training.json; then the confidence models refit. Needs `corpus` and the quality
# benchmark's indexes (bench-quality).
ranker: setup
	$(VENV)/bin/python -m models.ranker.workspaces
	$(VENV)/bin/python -m models.ranker.dump --quality-state $(QUALITY_STATE_DIR)
	$(VENV)/bin/python -m models.ranker.train
	$(VENV)/bin/python -m models.ranker.calibrate --quality-state $(QUALITY_STATE_DIR)

# The learned ranker for indexes whose primary model is code-static (issue 27): the same steps on
# that profile's indexes (the quality ones from `make bench-models`), into models/ranker/code-static/,
# which the retrieval service picks for such indexes (policy.learned.Rankers). The confidence
# models stay the ones `make ranker` fits.
ranker-code-static: setup
	CODECOMPASS_EMBEDDING_PROFILE=code-static $(VENV)/bin/python -m models.ranker.workspaces
	CODECOMPASS_EMBEDDING_PROFILE=code-static $(VENV)/bin/python -m models.ranker.dump \
		--quality-state bench/.work/quality-state-code-static
	$(VENV)/bin/python -m models.ranker.train --out models/ranker/code-static/model.txt

bench-badinput: setup
	status=0; $(VENV)/bin/python -m bench.badinput || status=$$?; \
	$(VENV)/bin/python -m bench.report; exit $$status
