"""What makes the Python image big: the installed size of every package of its lock
(deploy/docker/python-requirements.lock, what the runtime venv holds), the largest first, against
what the build-only packages (the `export` and `models` extras: torch, onnx, sentence-transformers
and what they alone pull) would add, and the model files the image bakes in.

Sizes are read from this machine's .venv (`make setup` installs both sets), as each distribution's
RECORD lists its files: the x86_64 wheels; arm64's differ by a few percent. The base image
(python:3.11-slim, ~125 MB) comes on top.

Run: .venv/bin/python -m bench.image_size [--top 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from codecompass.common.config import CHECKOUT_ROOT

LOCK = CHECKOUT_ROOT / "deploy" / "docker" / "python-requirements.lock"
BUILD_ONLY_ROOTS = ("torch", "onnx", "sentence-transformers")
# What python.Dockerfile copies into the runtime stage besides the venv: the committed models, and
# the minilm profile's export (made at build into XDG_CACHE_HOME).
BAKED_IN = ("models/code_small/model", "models/code_static/model", "models/ranker/model.txt")
MIB = 2**20


def installed() -> dict[str, metadata.Distribution]:
    return {canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions()}


def size(distribution: metadata.Distribution) -> int:
    total = 0
    for file in distribution.files or ():
        path = Path(str(file.locate()))
        if path.is_file():
            total += path.stat().st_size
    return total


def locked_names() -> list[str]:
    return [canonicalize_name(m.group(1)) for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", LOCK.read_text(), re.M)]


def closure(roots: tuple[str, ...], dists: dict[str, metadata.Distribution]) -> set[str]:
    """The roots and every installed distribution they require, on this platform."""
    seen: set[str] = set()
    todo = [canonicalize_name(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen or name not in dists:
            continue
        seen.add(name)
        for spec in dists[name].requires or ():
            requirement = Requirement(spec)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(requirement.name))
    return seen


def tree_size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure() -> dict:
    dists = installed()
    runtime = {name: size(dists[name]) for name in locked_names() if name in dists}
    missing = sorted(set(locked_names()) - set(dists))
    build_only = {name: size(dists[name]) for name in closure(BUILD_ONLY_ROOTS, dists) - set(runtime)}
    from codecompass.embedding.minilm_onnx import model_cache_dir

    baked = {path: tree_size(CHECKOUT_ROOT / path) for path in BAKED_IN}
    baked["minilm ONNX export"] = sum(tree_size(p) for p in model_cache_dir().glob("*.onnx"))
    return {"runtime_venv": runtime, "build_only_left_out": build_only, "baked_in": baked,
            "not_installed_here": missing}


def table(title: str, sizes: dict[str, int], top: int) -> list[str]:
    rows = sorted(sizes.items(), key=lambda item: -item[1])
    lines = [f"| {title} | MiB |", "|---|---:|"]
    lines += [f"| {name} | {value / MIB:.1f} |" for name, value in rows[:top]]
    if len(rows) > top:
        lines.append(f"| {len(rows) - top} others | {sum(v for _, v in rows[top:]) / MIB:.1f} |")
    lines.append(f"| **total ({len(rows)})** | **{sum(sizes.values()) / MIB:.1f}** |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--json", type=Path, help="also write the sizes (bytes) here")
    args = parser.parse_args()
    found = measure()
    for title, key in (("runtime venv (the lock)", "runtime_venv"),
                       ("build-only, left out of the runtime stage", "build_only_left_out"),
                       ("baked-in models", "baked_in")):
        print("\n".join(table(title, found[key], args.top)), end="\n\n")
    if found["not_installed_here"]:
        print(f"locked but not installed here (not measured): {', '.join(found['not_installed_here'])}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
