"""The written rule that chooses the training corpus's repositories, and the manifest it writes.

The rule, in order (every parameter is in RULE below and is written into the manifest):

1. Rank npm packages by monthly downloads (/work/.library/env/packages/npm.tsv: name, version,
   downloads_a_month); the TOP_PACKAGES best are candidates. Download rank is a measure of what
   people build on that nobody here chooses.
2. Read each candidate's registry metadata (registry.npmjs.org/<name>/latest, cached under
   models/.work/registry/). Keep a package whose `repository` is on GitHub and whose `license`
   is one of LICENCES (an `OR` expression needs one of them, an `AND` expression all).
3. One repository per GitHub repository: a monorepo publishes many packages and ranks by its
   best one; its other packages are recorded beside it.
4. Exclude the off-limits list (codecompass_dev/corpus/policy.py: by package, scope and repository), every
   repository of an off-limits repository's owner, and every repository with an off-limits name
   as a part of its own (vite-node, zod-to-json-schema: that project's ecosystem). Exclude the
   benchmark's ten quality repositories (codecompass_dev/corpus/assemble.py QUALITY_REPOS: they keep their
   dev/test roles), every repository of their owners (same authors, same identifiers), and
   their forks and mirrors: a repository of the same name under another owner (before
   fetching) or one that shares a root commit with a quality repository's mirror (after; a
   fork of a better-ranked train repository is rejected the same way).
5. Screen before fetching: most top-ranked packages are one-file utilities, and the fetch tool
   brings at most 500 repositories a session, so a repository is fetched only when the npm
   tarball of one of its SCREEN_PACKAGES best-ranked packages holds at least
   MIN_TARBALL_SOURCES TS/JS source files (what its authors ship is a lower bound on what they
   write; measured on the first 41 candidates judged, this kept 9 of their 12 passes and 1 of
   their 29 failures). A repository screened out is recorded with its counts.
6. Fetch the survivors in rank order (the search tool's `fetch`, which refuses snapshots over
   500 MiB or 100,000 files; a refusal is recorded as the reason) and pin each to the commit of
   its default branch's head. Measure the pinned tree: it passes the band when it has at least
   MIN_SOURCE_FILES TypeScript/JavaScript source files (the extensions the index chunks,
   declaration files not counted) and those make up at least MIN_TS_JS_SHARE of its code bytes
   (CODE_SUFFIXES), within MAX_TREE_FILES files.
7. Confirm the licence from the repository's own licence file at the pinned commit where it has
   one (the registry can be wrong): a file that reads as another licence rejects the repository.
   Both readings are recorded.
8. Stop when TARGET repositories pass (above the issue's 150, so later losses leave enough).
   Every candidate looked at before that point is in the manifest: passed, or rejected with its
   reason.

Usage (python -m models.corpus.select ...):
  candidates            steps 1-4: rank, read the registry, write the ordered candidate list
  pending [--count N]   the next N candidates that still need a fetch (`fetch github:<owner>/<name>`)
  refused OWNER/NAME REASON   record that the fetch tool refused a repository, with its answer
  manifest              steps 5-8 on the fetched mirrors: write models/corpus/manifest.json
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import json
import re
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from codecompass_dev.corpus.assemble import QUALITY_REPOS, is_source
from codecompass_dev.corpus.mirrors import MirrorError, find_mirror, git, mirrors_dir
from codecompass_dev.corpus.policy import OFF_LIMITS_NAMES, OFF_LIMITS_REPOS, off_limits

MODELS_DIR = Path(__file__).resolve().parent.parent
WORK_DIR = MODELS_DIR / ".work"
REGISTRY_CACHE = WORK_DIR / "registry"
SELECTION_DIR = WORK_DIR / "selection"
CANDIDATES_PATH = SELECTION_DIR / "candidates.json"
REFUSALS_PATH = SELECTION_DIR / "fetch_refusals.json"
MANIFEST_PATH = Path(__file__).resolve().parent / "manifest.json"
NPM_RANKING = Path("/work/.library/env/packages/npm.tsv")
REGISTRY_URL = "https://registry.npmjs.org/{name}/latest"
TARBALL_URL = "https://registry.npmjs.org/{name}/-/{base}-{version}.tgz"

LICENCES = ("MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "0BSD")
RULE = {
    "ranking": "npm packages by downloads_a_month (npm.tsv)",
    "top_packages": 4000,
    "screen_packages": 3,
    "min_tarball_sources": 6,
    "licences": list(LICENCES),
    "min_source_files": 30,
    "min_ts_js_share": 0.5,
    "max_tree_files": 100_000,
    "max_snapshot_mib": 500,
    "target": 160,
}
# What counts as code when the TS/JS share is measured: programming languages, not data or prose.
# Declaration files count as code that is not TS/JS source: the index does not chunk them, so a
# repository of type declarations alone (type-fest) is no source of training chunks.
CODE_SUFFIXES = frozenset(
    {".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs", ".vue", ".svelte", ".astro", ".coffee", ".elm",
     ".py", ".go", ".rs", ".java", ".kt", ".kts", ".scala", ".groovy", ".c", ".h", ".cc", ".cpp", ".cxx", ".hh",
     ".hpp", ".m", ".mm", ".swift", ".rb", ".php", ".cs", ".fs", ".dart", ".lua", ".pl", ".r", ".jl", ".ex", ".exs",
     ".erl", ".hs", ".ml", ".clj", ".zig", ".sh", ".ps1"})  # fmt: skip
OFF_LIMITS_OWNERS = frozenset(github.split("/")[0] for github in OFF_LIMITS_REPOS)
QUALITY_GITHUB = frozenset(repo.github.lower() for repo in QUALITY_REPOS)
QUALITY_NAMES = frozenset(repo.github.lower().split("/")[1] for repo in QUALITY_REPOS)
QUALITY_OWNERS = frozenset(repo.github.lower().split("/")[0] for repo in QUALITY_REPOS)
_GITHUB_URL = re.compile(r"github\.com[/:]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?(?:[/#?].*)?$")
_SHORTHAND = re.compile(r"^(?:github:)?([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)$")


@dataclass(frozen=True)
class Package:
    name: str
    downloads: int


def ranked_packages(path: Path, top: int) -> list[Package]:
    """The `top` packages of npm.tsv by monthly downloads, best first (ties by name, for a stable order)."""
    packages = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        next(lines)  # the header
        for line in lines:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 3 and fields[2].isdigit():
                packages.append(Package(fields[0], int(fields[2])))
    packages.sort(key=lambda p: (-p.downloads, p.name))
    return packages[:top]


def github_repo(repository: object) -> str | None:
    """`owner/name` of a package.json `repository` value on GitHub, else None."""
    url = repository.get("url") if isinstance(repository, dict) else repository
    if not isinstance(url, str):
        return None
    url = url.strip()
    match = _GITHUB_URL.search(url) or _SHORTHAND.match(url)
    if match is None:
        return None
    owner, name = match.group(1), match.group(2)
    return f"{owner}/{name}" if name not in (".", "..") else None


def _licence_ids(meta: dict) -> str | None:
    licence = meta.get("license")
    if isinstance(licence, dict):
        licence = licence.get("type")
    if licence is None and isinstance(meta.get("licenses"), list):
        types = [entry.get("type") for entry in meta["licenses"] if isinstance(entry, dict)]
        licence = " OR ".join(t for t in types if isinstance(t, str)) or None
    return licence if isinstance(licence, str) else None


_ALIASES = {"apache 2.0": "Apache-2.0", "apache-2": "Apache-2.0", "apache2": "Apache-2.0", "bsd": "BSD-3-Clause"}


def permissive_licence(expression: str | None) -> bool:
    """True when an SPDX expression allows use under one of LICENCES (`OR`: any; `AND`: all)."""
    if not expression:
        return False
    allowed = {licence.lower() for licence in LICENCES}

    def one(term: str) -> bool:
        term = term.strip().strip("()").strip()
        return _ALIASES.get(term.lower(), term).lower() in allowed

    return any(all(one(part) for part in re.split(r"\s+AND\s+", alt)) for alt in re.split(r"\s+OR\s+", expression))


def registry_metadata(name: str) -> dict:
    """The registry's `latest` document of a package, cached; {"error": ...} when there is none."""
    cache = REGISTRY_CACHE / (urllib.parse.quote(name, safe="") + ".json")
    if cache.is_file():
        return json.loads(cache.read_text())
    url = REGISTRY_URL.format(name=urllib.parse.quote(name, safe="@/"))
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            full = json.loads(answer.read())
        meta = {key: full.get(key) for key in ("name", "version", "license", "licenses", "repository")}
    except urllib.error.HTTPError as error:
        meta = {"error": f"registry answered {error.code}"}
    except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as error:
        return {"error": f"registry unreachable: {error}", "transient": True}  # not cached: try again next time
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(meta))
    return meta


def tarball_sources(name: str) -> int | None:
    """TS/JS source files in the npm tarball of a package's latest version, cached; None when unreadable."""
    cache = REGISTRY_CACHE / "tarballs" / (urllib.parse.quote(name, safe="") + ".json")
    if cache.is_file():
        return json.loads(cache.read_text())["ts_js_files"]
    meta = registry_metadata(name)
    if "version" not in meta:
        return None
    url = TARBALL_URL.format(
        name=urllib.parse.quote(name, safe="@/"), base=name.split("/")[-1], version=meta["version"]
    )
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            data = answer.read()
        with tarfile.open(fileobj=io.BytesIO(data)) as tarball:
            count = sum(1 for member in tarball.getmembers() if member.isfile() and is_source(Path(member.name)))
    except (urllib.error.URLError, TimeoutError, tarfile.TarError, OSError):
        return None  # not cached: a passing fault is tried again next time
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"version": meta["version"], "ts_js_files": count}))
    return count


def screen(candidate: dict) -> str | None:
    """Step 5: why a candidate is not worth a fetch, or None; tarball counts are added to the candidate."""
    counts = {name: tarball_sources(name) for name in candidate["npm"][: RULE["screen_packages"]]}
    candidate["tarball_ts_js_files"] = counts
    if any(count is not None and count >= RULE["min_tarball_sources"] for count in counts.values()):
        return None
    if any(count is None for count in counts.values()):
        return "tarball unreadable"
    return f"npm tarballs hold {max(counts.values())} TS/JS source files (under {RULE['min_tarball_sources']})"


def screened(candidates: list[dict]) -> list[tuple[dict, str | None]]:
    """The candidates with their screening verdicts, downloaded 16 at a time."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        return list(zip(candidates, pool.map(screen, candidates), strict=True))


def exclusion(github: str, packages: list[str]) -> str | None:
    """Why a repository may not be a training source before it is fetched, or None."""
    lowered = github.lower()
    name = lowered.split("/")[1]
    if off_limits(github) or any(off_limits(package) for package in packages):
        return "off-limits (codecompass_dev/corpus/policy.py)"
    owner = lowered.split("/")[0]
    if owner in OFF_LIMITS_OWNERS:
        # The off-limits projects' own organisations (their plugins, middleware, adapters) are
        # what an independent evaluation of those projects reads too.
        return "owned by the organisation of an off-limits repository"
    if set(re.split(r"[-_.]", name)) & OFF_LIMITS_NAMES:
        return "named after an off-limits project (part of its ecosystem: vite-node, zod-to-json-schema)"
    if lowered in QUALITY_GITHUB:
        return "a quality benchmark repository (dev/test)"
    if name in QUALITY_NAMES:
        return "same name as a quality benchmark repository (possible fork or mirror)"
    if owner in QUALITY_OWNERS:
        # Same authors, same identifiers and idioms: a dev/test score must not be helped by them.
        return "owned by the organisation of a quality benchmark repository"
    return None


def select_candidates(packages: list[Package], metadata: dict[str, dict]) -> dict:
    """Steps 2-4: the repositories in rank order, and the packages left out with their reasons."""
    repos: dict[str, dict] = {}  # lower-case owner/name -> candidate
    rejected_packages = []
    for rank, package in enumerate(packages, 1):
        meta = metadata[package.name]
        github = github_repo(meta.get("repository"))
        licence = _licence_ids(meta)
        reason = (
            meta.get("error")
            or (None if github else "repository not on GitHub")
            or (None if permissive_licence(licence) else f"licence not permissive: {licence}")
        )
        if reason:
            rejected_packages.append({"package": package.name, "rank": rank, "reason": reason})
            continue
        entry = repos.setdefault(
            github.lower(),
            {"github": github, "rank": rank, "downloads": package.downloads, "licence_registry": licence, "npm": []},
        )
        entry["npm"].append(package.name)
    candidates, excluded = [], []
    for entry in repos.values():
        reason = exclusion(entry["github"], entry["npm"])
        (excluded if reason else candidates).append({**entry, **({"reason": reason} if reason else {})})
    return {"candidates": candidates, "excluded": excluded, "rejected_packages": rejected_packages}


# ---- after fetching: the pinned tree -------------------------------------------------------------

_LICENCE_FILE = re.compile(r"^(licen[cs]e|copying)([-._][a-z0-9.-]+)?$", re.IGNORECASE)


def licence_of_text(text: str) -> str | None:
    """The licence a licence file's text grants, by the clauses that identify it; None when unknown."""
    flat = " ".join(text.split()).lower()
    if "permission is hereby granted, free of charge" in flat:
        return "MIT"
    if "apache license" in flat and "version 2.0" in flat:
        return "Apache-2.0"
    if "redistribution and use in source and binary forms" in flat:
        return "BSD-3-Clause" if "neither the name" in flat or "may not be used to endorse" in flat else "BSD-2-Clause"
    if "permission to use, copy, modify, and/or distribute this software for any purpose" in flat or (
        "permission to use, copy, modify, and distribute this software for any purpose" in flat
    ):
        return "ISC" if "provided that the above copyright notice" in flat else "0BSD"
    if "gnu general public license" in flat or "gnu lesser general public license" in flat:
        return "GPL/LGPL"
    if "blue oak model license" in flat:
        return "BlueOak-1.0.0"
    if "mozilla public license" in flat:
        return "MPL-2.0"
    return None


def licence_files(mirror: Path, commit: str) -> dict[str, str | None]:
    """Each licence file at the root of the pinned tree and the licence it reads as."""
    names = [n for n in git(mirror, "ls-tree", "--name-only", commit).splitlines() if _LICENCE_FILE.match(n)]
    found = {}
    for name in names:
        try:
            text = git(mirror, "cat-file", "-p", f"{commit}:{name}")
        except MirrorError:
            found[name] = None  # a submodule or a blob the snapshot lacks: unread
            continue
        found[name] = licence_of_text(text)
    return found


def measure_tree(mirror: Path, commit: str) -> dict:
    """Files, TS/JS source files and bytes, and the TS/JS share of the code bytes of a commit's tree."""
    files = source_files = source_bytes = code_bytes = 0
    for line in git(mirror, "ls-tree", "-r", "-l", "-z", commit).split("\0"):
        if not line:
            continue
        meta, path = line.split("\t", 1)
        _mode, kind, _sha, size = meta.split()
        if kind != "blob":
            continue
        files += 1
        name = path.rsplit("/", 1)[-1]
        suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
        size_bytes = int(size) if size.isdigit() else 0
        if suffix in CODE_SUFFIXES:
            code_bytes += size_bytes
        if is_source(Path(name)):
            source_files += 1
            source_bytes += size_bytes
    share = source_bytes / code_bytes if code_bytes else 0.0
    return {"files": files, "ts_js_files": source_files, "ts_js_bytes": source_bytes, "ts_js_share": round(share, 4)}


def root_commits(mirror: Path, commit: str) -> set[str]:
    return set(git(mirror, "rev-list", "--max-parents=0", commit).split())


def quality_roots() -> dict[str, str]:
    """Root commit -> quality repository, from the quality repositories' mirrors (those that are present)."""
    roots = {}
    for repo in QUALITY_REPOS:
        mirror = find_mirror(repo.github)
        if mirror is not None:
            for root in root_commits(mirror, repo.commit):
                roots[root] = f"{repo.github} (a quality repository)"
    return roots


def judge(candidate: dict, mirror: Path, forks_of: dict[str, str]) -> dict:
    """Steps 5-6 for one fetched repository: its pin, measures and licence files, and a reason if it fails."""
    head = git(mirror, "symbolic-ref", "--quiet", "HEAD").strip()
    commit = git(mirror, "rev-parse", "--verify", f"{head}^{{commit}}").strip()
    record = {**candidate, "commit": commit, "default_branch": head.removeprefix("refs/heads/")}
    record.update(measure_tree(mirror, commit))
    files = licence_files(mirror, commit)
    record["licence_files"] = files
    read = sorted({licence for licence in files.values() if licence})
    record["licence_file"] = " AND ".join(read) if read else None
    roots = root_commits(mirror, commit)
    record["root_commits"] = sorted(roots)
    shared_root = next((forks_of[root] for root in roots if root in forks_of), None)
    reason = None
    if shared_root:
        reason = f"shares its root commit with {shared_root}: a fork or mirror"
    elif record["files"] > RULE["max_tree_files"]:
        reason = f"{record['files']} files in the tree (over {RULE['max_tree_files']})"
    elif record["ts_js_files"] < RULE["min_source_files"]:
        reason = f"{record['ts_js_files']} TS/JS source files (under {RULE['min_source_files']})"
    elif record["ts_js_share"] < RULE["min_ts_js_share"]:
        reason = f"TS/JS is {record['ts_js_share']:.0%} of the code bytes (under {RULE['min_ts_js_share']:.0%})"
    elif files and not read:
        reason = f"licence file(s) {sorted(files)} not recognised"
    elif read and not all(permissive_licence(licence) for licence in read):
        reason = f"licence file reads as {record['licence_file']}"
    if reason:
        record["reason"] = reason
    return record


# ---- the command line ---------------------------------------------------------------------------


def read_json(path: Path, default):
    return json.loads(path.read_text()) if path.is_file() else default


def write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1) + "\n")


def command_candidates(_args: argparse.Namespace) -> int:
    packages = ranked_packages(NPM_RANKING, RULE["top_packages"])
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        metadata = dict(zip((p.name for p in packages), pool.map(lambda p: registry_metadata(p.name), packages),
                            strict=True))
    unreachable = [name for name, meta in metadata.items() if meta.get("transient")]
    if unreachable:
        print(f"the registry did not answer for {len(unreachable)} package(s), e.g. {unreachable[0]}: run it again")
        return 1
    selection = select_candidates(packages, metadata)
    write_json(CANDIDATES_PATH, selection)
    print(
        f"{len(packages)} packages -> {len(selection['candidates'])} candidate repositories "
        f"({len(selection['excluded'])} excluded, {len(selection['rejected_packages'])} packages rejected)"
    )
    return 0


def load_candidates() -> dict | None:
    selection = read_json(CANDIDATES_PATH, None)
    if selection is None:
        print(f"{CANDIDATES_PATH} is missing: run python -m models.corpus.select candidates")
    return selection


def walk(candidates: list[dict]):
    """The candidates in rank order with their screening verdicts, screened a window at a time."""
    window = 64
    for start in range(0, len(candidates), window):
        yield from screened(candidates[start : start + window])


def command_pending(args: argparse.Namespace) -> int:
    selection = load_candidates()
    if selection is None:
        return 1
    refusals = read_json(REFUSALS_PATH, {})
    pending = []
    for candidate, verdict in walk(selection["candidates"]):
        if len(pending) >= args.count:
            break
        github = candidate["github"]
        if verdict is None and find_mirror(github) is None and github.lower() not in refusals:
            pending.append(github)
    print("\n".join(pending))
    return 0


def command_refused(args: argparse.Namespace) -> int:
    refusals = read_json(REFUSALS_PATH, {})
    refusals[args.github.lower()] = " ".join(args.reason)
    write_json(REFUSALS_PATH, refusals)
    return 0


def command_manifest(_args: argparse.Namespace) -> int:
    selection = load_candidates()
    if selection is None:
        return 1
    refusals = read_json(REFUSALS_PATH, {})
    forks_of = quality_roots()
    passed, rejected, not_fetched = [], [], 0
    for candidate, verdict in walk(selection["candidates"]):
        if len(passed) >= RULE["target"]:
            break
        github = candidate["github"]
        if verdict is not None:
            rejected.append({**candidate, "reason": f"screened out: {verdict}"})
            continue  # a mirror fetched before the screen existed does not count
        if github.lower() in refusals:
            rejected.append({**candidate, "reason": f"fetch refused: {refusals[github.lower()]}"})
            continue
        mirror = find_mirror(github)
        if mirror is None:
            not_fetched += 1
            continue
        try:
            record = judge(candidate, mirror, forks_of)
        except MirrorError as error:
            record = {**candidate, "reason": f"unreadable snapshot: {error}"}
        if "reason" in record:
            rejected.append(record)
        else:
            passed.append({**record, "split": "train"})
            # A later fork or mirror of a chosen repository would only repeat it.
            forks_of.update({root: f"{github}, already in the corpus" for root in record["root_commits"]})
    if not_fetched:
        print(
            f"{not_fetched} candidate(s) before the target are not fetched yet: python -m models.corpus.select pending"
        )
    manifest = {
        "description": "Training corpus of issue 16 (models/corpus/select.py states the rule); built by `make corpus`.",
        "rule": RULE,
        "mirrors": f"fetched snapshots, found via $BENCH_MIRRORS (here {mirrors_dir()})",
        "looked_at": {
            "packages": RULE["top_packages"],
            "packages_rejected": len(selection["rejected_packages"]),
            "repositories_excluded": len(selection["excluded"]),
            "repositories_judged": len(passed) + len(rejected),
        },
        "repositories": passed,
        "rejected": rejected,
        "excluded": selection["excluded"] + [quality_entry(repo) for repo in QUALITY_REPOS],
        "rejected_packages": selection["rejected_packages"],
    }
    write_json(MANIFEST_PATH, manifest)
    print(f"{len(passed)} repositories pass, {len(rejected)} rejected -> {MANIFEST_PATH}")
    return 0 if len(passed) >= RULE["target"] else 1


def quality_entry(repo) -> dict:
    return {"github": repo.github, "commit": repo.commit, "split": repo.split, "reason": "quality benchmark repository"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.corpus.select", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("candidates").set_defaults(run=command_candidates)
    pending = commands.add_parser("pending")
    pending.add_argument("--count", type=int, default=8)
    pending.set_defaults(run=command_pending)
    refused = commands.add_parser("refused")
    refused.add_argument("github")
    refused.add_argument("reason", nargs="+")
    refused.set_defaults(run=command_refused)
    commands.add_parser("manifest").set_defaults(run=command_manifest)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
