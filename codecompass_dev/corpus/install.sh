#!/usr/bin/env bash
# Installs the pinned benchmark corpus (package.json + package-lock.json next to this script)
# into bench/.corpus/ with `npm ci`, so every run measures byte-identical sources.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The installed corpus is the benchmark's data: bench/.corpus, beside its workspaces (bench/.work).
dest="$(cd "$here/../.." && pwd)/bench/.corpus"
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
# --ignore-scripts: the corpus is data; nothing in it should run.
(cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
echo "corpus installed in $dest"
