"""The packages of a monorepo, as scopes an agent can name (`package: "@acme/core"`) instead of a
path filter, listed by `index_status`, and named beside each result.

A package is a folder with a package.json that the workspace's own manifests declare: the root
package.json's `workspaces` (a list, or npm/yarn's `{"packages": [...]}`), pnpm-workspace.yaml's
`packages`, lerna.json's `packages`, and the folders the root tsconfig.json's project
`references` name. Globs are expanded as those tools do (`packages/*`, `apps/**`, `!` excludes),
never into node_modules. A manifest that cannot be read or parsed declares nothing: the scopes
are a convenience, and a broken manifest must not break a search.
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

# Folders a package glob never descends into.
_NEVER = {"node_modules", ".git"}
# At most this many packages are read: a glob like `**` over a huge tree must stay cheap.
MAX_PACKAGES = 2000


@dataclass(frozen=True)
class Package:
    name: str  # package.json's name, else its folder
    folder: str  # workspace-relative, POSIX


def packages_of(root: Path) -> tuple[Package, ...]:
    """The workspace's packages, sorted by folder; empty when it declares none."""
    patterns = _declared(root)
    include = [p for p in patterns if not p.startswith("!")]
    exclude = [p[1:] for p in patterns if p.startswith("!")]
    found: dict[str, Package] = {}
    for pattern in include:
        for folder in _expand(root, pattern):
            relative = folder.relative_to(root).as_posix()
            if relative in found or any(PurePosixPath(relative).match(e.rstrip("/")) for e in exclude):
                continue
            name = _name(folder / "package.json") or relative
            found[relative] = Package(name, relative)
            if len(found) >= MAX_PACKAGES:
                break
    return tuple(sorted(found.values(), key=lambda p: p.folder))


def package_of(relative_path: str, packages: tuple[Package, ...]) -> Package | None:
    """The package a workspace-relative file belongs to: the deepest folder holding it."""
    best: Package | None = None
    for package in packages:
        if relative_path.startswith(package.folder + "/") and (best is None or len(package.folder) > len(best.folder)):
            best = package
    return best


def _declared(root: Path) -> list[str]:
    patterns: list[str] = []
    manifest = _json(root / "package.json")
    workspaces = manifest.get("workspaces") if isinstance(manifest, dict) else None
    if isinstance(workspaces, dict):
        workspaces = workspaces.get("packages")
    patterns += _strings(workspaces)
    pnpm = _yaml(root / "pnpm-workspace.yaml")
    patterns += _strings(pnpm.get("packages") if isinstance(pnpm, dict) else None)
    lerna = _json(root / "lerna.json")
    patterns += _strings(lerna.get("packages") if isinstance(lerna, dict) else None)
    tsconfig = _json(root / "tsconfig.json")
    references = tsconfig.get("references") if isinstance(tsconfig, dict) else None
    for reference in references if isinstance(references, list) else ():
        path = reference.get("path") if isinstance(reference, dict) else None
        if isinstance(path, str) and path.strip():
            target = path.strip().removeprefix("./")
            # A reference may name the tsconfig file itself rather than its folder.
            patterns.append(str(PurePosixPath(target).parent) if target.endswith(".json") else target)
    return patterns


def _expand(root: Path, pattern: str) -> list[Path]:
    pattern = pattern.strip().removeprefix("./").rstrip("/")
    parts = PurePosixPath(pattern).parts
    if not pattern or pattern.startswith("/") or ".." in parts:
        return []  # outside the workspace: not a scope of it
    literal = list(itertools.takewhile(lambda part: not any(ch in part for ch in "*?["), parts))
    start = root.joinpath(*literal)
    if len(literal) == len(parts):
        return [start] if (start / "package.json").is_file() else []
    # Walked, not globbed: a `**` must not descend into node_modules on its way.
    deepest = None if "**" in parts else len(parts) - len(literal)
    out = []
    for folder, subfolders, files in os.walk(start):
        depth = len(Path(folder).relative_to(start).parts)
        subfolders[:] = [] if deepest is not None and depth >= deepest else \
            sorted(f for f in subfolders if f not in _NEVER and not f.startswith("."))
        relative = Path(folder).relative_to(root).as_posix()
        if "package.json" in files and depth > 0 and _matches(relative, pattern):
            out.append(Path(folder))
    return out


def _matches(relative: str, pattern: str) -> bool:
    """A glob over whole path segments: `*` within one, `**` any number of them (none included)."""
    return _segments_match(PurePosixPath(relative).parts, PurePosixPath(pattern).parts)


def _segments_match(path: tuple[str, ...], glob: tuple[str, ...]) -> bool:
    if not glob:
        return not path
    if glob[0] == "**":
        return any(_segments_match(path[i:], glob[1:]) for i in range(len(path) + 1))
    return bool(path) and fnmatch.fnmatchcase(path[0], glob[0]) and _segments_match(path[1:], glob[1:])


def _name(package_json: Path) -> str:
    manifest = _json(package_json)
    name = manifest.get("name") if isinstance(manifest, dict) else None
    return name.strip() if isinstance(name, str) else ""


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _yaml(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return None
