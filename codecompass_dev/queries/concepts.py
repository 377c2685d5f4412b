"""The `concept` query rules: how a part of a library works -> its file(s), from its own prose.

A concept query asks how a part of the system works ("how the client retries a failed request",
"the pipeline that validates a route's schema"); its answer is a file or a few files, scored at
file level (codecompass_dev/evaluation/metrics.py), and at symbol level too where the rule names symbols. As in
commits.py, the text is the repository's own prose and a written rule picks the answer:
nobody on this project wrote a query or chose a target. Every repository of
codecompass_dev/corpus/assemble.py QUALITY_REPOS is read at its pinned commit from its git mirror (a
checkout for the files, `git log`/`git show` for the history); nothing comes from the network.

Rules, by the source that states what code does at file level:

docs-file    A Markdown section that names one to MAX_DOC_FILES of the library's code files by
             path: a link (`[lib/route.js](...)`, `https://github.com/o/r/blob/main/lib/x.js#L9`),
             a code span or plain text (`see src/core/scheduler.ts`), an HTML comment
             (`<!-- source_link=lib/x.js -->`). A path counts when it is a code file's path or a
             suffix of two or more segments that one file of the repository alone ends with; a
             bare file name (`server.js`, `knex.js`) never does (a user's file, a project's name).
             Targets: the named files. Query: the section's first explanatory sentence (below).
docs-api     A Markdown section naming no file, about API the library defines. The API names are
             what code spans write (`useQuery`, `queryClient.fetchQuery(options)`,
             `new QueryClient()`: of a member chain or a call, the last name), or a heading that
             is one name (`### whereIn [-MY]`); a name counts when it has MIN_NAME_CHARS or more,
             is not the library's own name (`knex`, which stands for all of it) nor a file name's
             end (`package.json`), and is defined in 1..MAX_DEFINING_FILES code files: a function,
             method, class or accessor of exactly that name, not one nested in a method (a local
             helper); a name defined in more files (`next`) says nothing about where to look. The
             section is about the names its heading writes, if any (if they are all too common,
             the section is skipped): its first paragraph with an explanatory sentence is the
             query's; else the first paragraph whose own code spans name API is. Targets: the
             files defining those names, 1..MAX_DOC_FILES of them (more: an overview, so a
             paragraph's names send the rule on to the next paragraph, a heading's skip the
             section); symbol targets: the definitions, when there are 1..MAX_SYMBOL_TARGETS.
package      A package's description of itself: the `description` of the package.json of a code
             package (a package folder holding a code path) -> its entry file, mapped back to the
             source: the `source` field, else a code file among the `exports["."]`, `main` and
             `module` paths, else the code file named like the entry (`dist/hooks.js` -> the
             shallowest `hooks.*`, then `index.*`, under the package). And a README inside a code
             folder, not a package's own -> that folder's code files (1..MAX_README_FILES).
commit-body  The body (never the subject: subjects are the `nl` type) of a commit that changed
             MIN_COMMIT_FILES..MAX_COMMIT_FILES code files: non-merge commits reachable from the
             pinned commit (the newest --max-commits touching the code paths) whose subject
             passes the `nl` rule's filter (commits.clean_subject: a behaviour change, not
             docs, chore, test, release, ...). Query: the body's first explanatory sentence,
             unless it repeats the subject. Targets: the changed code files that still exist at
             the pin (at least MIN_COMMIT_FILES, and at least half of those changed); symbol
             targets: the innermost named symbols containing the changed lines
             (commits.touched_symbols), as they are at the pin, when there are
             1..MAX_SYMBOL_TARGETS of them (a wider diff names files only).

An explanatory sentence: of a section's (a body's) prose, in order: blocks between blank lines
that open as prose (not a list or its continuation lines, a table, a quote, a heading, HTML or its
comments, code), split into sentences (a leading all-caps label such as `BREAKING CHANGE:`
dropped). It has 5..40 words and MIN_PROSE_WORDS or more lowercase prose words (not a list of
names, not `fastify.get(path, [options], handler)`); opens with a capital letter, a digit, the
library's name or a name its code defines (not a fragment cut from a wrapped list item); does not
end in ':' (it introduces a list or an example), '?' or '!'; has balanced parentheses, no URL,
no issue reference (`#123`), no @mention; is not boilerplate (opening with "This PR", "This
commit", "See", "Fixes #", "Note", "Also", "Thanks", "For example", ...; naming added tests, a
changelog, a release, a review, CI, linting, a dependency, the docs); is not code (`=>`, braces,
a trailing `;`); is English (nine in ten letters ASCII).

Leaks. `leaks_name` (codecompass_dev/queries/text.py, as for the other types) is true when the sentence says a
target's name: a symbol target's or a defined API name, or a target file's name other than
`index`, verbatim or as its split words in sequence. A docs section's query is the first
explanatory sentence of its paragraph that names no target, else the paragraph's first one,
marked.

Docs: the `.md`, `.mdx` and `.markdown` files of the pinned tree, but not changelogs, licences,
contribution guides, codes of conduct, security or maintainer policies, `.github/` templates,
files under test or fixture folders, nor another package's docs in a monorepo: a file inside a
package folder beside a code package (`packages/mobx-react/README.md`), or under a folder named
by a word only such packages' folder names have (`docs/framework/vue/` for `packages/vue-query`).

The benchmark's concept queries (bench/quality/mine_concepts.py: every quality repository, leak
sampling, duplicates, the committed file) and the training corpus's concept pairs
(models/corpus/concepts.py: its own rule for what is code) both run these rules.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from codecompass_dev.corpus.assemble import TEST_DIR_NAMES, QualityRepo, checkout_repo, code_files, is_code_file
from codecompass_dev.corpus.mirrors import MirrorError, git, git_bytes
from codecompass_dev.queries.commits import clean_subject, diff_changes, pinned_symbol, touched_symbols
from codecompass_dev.queries.markdown import code_spans, outside_fences, prose_paragraphs, sections
from codecompass_dev.queries.symbol_queries import MAX_QUERY_WORDS, MIN_QUERY_WORDS
from codecompass_dev.queries.symbols import extract, symbols_by_path
from codecompass_dev.queries.text import leaks_name, sentences, split_identifier, words

RULES = ("docs-file", "docs-api", "package", "commit-body")
RUNTIME_KINDS = frozenset({"function", "method", "class", "accessor"})
MAX_DOC_FILES = 3
MAX_DEFINING_FILES = 3
MAX_README_FILES = 5
MIN_COMMIT_FILES = 2
MAX_COMMIT_FILES = 5
MAX_SYMBOL_TARGETS = 6
MIN_NAME_CHARS = 4
MIN_PROSE_WORDS = 3
MAX_DOC_BYTES = 512 * 1024

DOC_SUFFIXES = (".md", ".mdx", ".markdown")
_NOT_DOCS = re.compile(
    r"^(?:changelog|changes|history|license|licence|contributing|code_of_conduct|security|maintainers|governance|"
    r"pull_request_template)",
    re.IGNORECASE,
)
_HTML_COMMENT = re.compile(r"<!--.*?-->|\{/\*.*?\*/\}", re.DOTALL)
# A path as docs write it: in a link, a code span, a comment or plain text.
_PATH = re.compile(r"(?<![\w@$-])((?:[\w.@-]+/)*[\w.@-]+\.(?:[cm]?[jt]sx?))(?![\w/-])")
_BLOB = re.compile(r"^(?:https?://)?(?:www\.)?github\.com/[^/]+/[^/]+/(?:blob|tree|raw)/[^/]+/")
# An API name as a code span writes it: `name`, `a.b.name`, `new Name()`, `name<T>(args) => result`.
_API_SPAN = re.compile(r"^\s*(?:new\s+)?([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s*(?:<[^>]*>)?\s*(?:\(|$)")
# A heading without code spans that is one name, perhaps a call, perhaps annotated: `### whereIn [-MY]`.
_NAME_HEADING = re.compile(r"^([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s*(?:\([^)]*\))?\s*(?:[\[(].*)?$")
# `package.json`, `lib/x.js`: a file, not a member.
_FILE_NAME_ENDS = frozenset({"json", "js", "cjs", "mjs", "ts", "tsx", "jsx", "md", "yml", "yaml", "txt", "html", "css"})
_NOT_NAMES = frozenset(
    {"constructor", "default", "function", "class", "async", "await", "return", "this", "true", "false",
     "null", "undefined", "import", "export", "require", "module", "exports", "const", "typeof"}
)  # fmt: skip
_NESTING_KINDS = frozenset({"method", "accessor", "constructor"})

_REFERENCE_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_LABEL = re.compile(r"^[A-Z][A-Z -]{2,}:\s+")  # "BREAKING CHANGE: produce no longer ..."
_URL = re.compile(r"https?://|www\.|\]\(|\b\w+\.(?:com|org|io|dev)\b")
# An issue reference or an @mention (not a scoped package name, `@tanstack/query-core`).
_ISSUE_REF = re.compile(r"(?:^|\s|\()(?:[\w.-]+/[\w.-]+)?#\d+\b|(?:^|\s)@[\w-]+\b(?![/\w-])")
_CODE_LIKE = re.compile(r"=>|[{}]|;\s*$|^\s*(?:import|export|const|let|var|function|return)\b")
# A list folded into a paragraph: "include: - body: ...", "- YAML: Create ...".
_LIST_LIKE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s|:\s+[-*+]\s")
_PROSE_WORD = re.compile(r"^[a-z][a-z'-]*[a-z]$")
_FIRST_WORD = re.compile(r"^[\"'(*_]*([A-Za-z_$][\w$]*)")
_BOILERPLATE_START = re.compile(
    r"^(?:this (?:pr|pull request|patch|commit|change ?set)\b|in this (?:pr|pull request|commit)\b|pr\b|see\b|"
    r"refs?\b|fix(?:es|ed)?\s*(?:#|:)|close[sd]?\b|resolve[sd]?\b|related\b|follow[- ]?up\b|backport|"
    r"cherry[- ]pick|co-authored|signed-off|thanks?\b|thank you|note\b|also\b|todo\b|wip\b|tl;?dr|example|"
    r"for example|e\.g\.|update[sd]? (?:the )?(?:docs|readme|changelog|dependencies|deps)\b|bump|merge|revert|"
    r"release)",
    re.IGNORECASE,
)
_BOILERPLATE_WORD = re.compile(
    r"\b(?:add(?:s|ed|ing)?\s+(?:\w+\s+){0,2}tests?|tests?\s+(?:added|updated|pass(?:es|ed)?|fail(?:s|ed|ing)?)|"
    r"unit[- ]tests?|type[- ]tests?|test coverage|changelog|release notes?|released|this release|semver|"
    r"reviews?|reviewers?|ci|lint(?:er|ing)?|typos?|dependabot|dependenc(?:y|ies)|deps|pr|pull request|"
    r"changeset|readme|docs|documentation)\b",
    re.IGNORECASE,
)
# `Co-authored-by: ...`, `Fixes: #12`: a trailer, not prose.
_TRAILER = re.compile(
    r"^\s*[A-Za-z][\w-]*-[\w-]*:\s|^\s*(?:Fixes|Closes|Refs?|Resolves|See|Cc|PR-URL):\s", re.IGNORECASE
)
_RULE_LINE = re.compile(r"^\s*(?:-{3,}|={3,}|\*{3,}|_{3,})\s*$")


# --- Sentences -----------------------------------------------------------------------------


def prose_words(sentence: str) -> int:
    """Lowercase words of two or more letters: `Operator Subscriber AsyncSubject` has none."""
    return sum(bool(_PROSE_WORD.match(token.strip(",.;:!?\"'()[]*"))) for token in sentence.split())


def explanatory(sentence: str, known: frozenset[str]) -> bool:
    """A sentence that stands alone as a statement about code (module docstring); `known`: the
    names a sentence may open with in lowercase (the library's name and the names it defines)."""
    if not MIN_QUERY_WORDS <= len(words(sentence)) <= MAX_QUERY_WORDS or prose_words(sentence) < MIN_PROSE_WORDS:
        return False
    first = _FIRST_WORD.match(sentence)
    if sentence[:1].islower() and not (first and first.group(1) in known):
        return False
    if sentence.rstrip().endswith((":", "?", "!")) or sentence.count("(") != sentence.count(")"):
        return False
    if _URL.search(sentence) or _ISSUE_REF.search(sentence) or _CODE_LIKE.search(sentence):
        return False
    if _LIST_LIKE.search(sentence) or _BOILERPLATE_START.match(sentence.strip(" *-_\"'(")):
        return False
    if _BOILERPLATE_WORD.search(sentence):
        return False
    letters = [c for c in sentence if c.isalpha()]
    return sum(c.isascii() for c in letters) >= 0.9 * len(letters)


def explanatory_sentences(paragraph: str, known: frozenset[str]) -> Iterator[str]:
    for sentence in sentences(" ".join(_REFERENCE_LINK.sub(r"\1", paragraph).split())):
        sentence = _LABEL.sub("", sentence)
        if explanatory(sentence, known):
            yield sentence


def strip_comments(text: str) -> str:
    """HTML (and MDX) comments blanked, their line breaks kept, so line numbers do not move."""
    return _HTML_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def names_of(files: Iterable[str], symbols: Iterable[str]) -> set[str]:
    """The names a leak-free query does not say: symbol names, and file names but `index`."""
    stems = {PurePosixPath(path).name.split(".")[0] for path in files}
    return {name.split(".")[-1] for name in symbols} | {stem for stem in stems if stem != "index"}


def leaks(sentence: str, names: Iterable[str]) -> bool:
    return any(leaks_name(sentence, name) for name in names if split_identifier(name))


def pick_sentence(paragraph: str, names: set[str], known: frozenset[str]) -> tuple[str, bool] | None:
    """Of one paragraph, the first explanatory sentence naming no target, else the first one
    (marked as leaking): the sentences of one paragraph keep to one subject."""
    first = None
    for sentence in explanatory_sentences(paragraph, known):
        if not leaks(sentence, names):
            return sentence, False
        first = first or (sentence, True)
    return first


def first_pick(
    paragraphs: Iterable[tuple[int, str]], names: set[str], known: frozenset[str]
) -> tuple[int, str, bool] | None:
    """(line, sentence, leaks) of the first paragraph that has an explanatory sentence."""
    for line, paragraph in paragraphs:
        picked = pick_sentence(paragraph, names, known)
        if picked:
            return line, *picked
    return None


# --- The repository at its pinned commit ----------------------------------------------------


@dataclass
class Candidate:
    rule: str
    query: str
    files: list[str]
    targets: list[dict]  # symbol targets: path, qualified_name, start_line, end_line
    leaks_name: bool
    source: dict = field(default_factory=dict)

    def answer(self) -> tuple:
        return tuple(self.files), tuple((t["path"], t["qualified_name"]) for t in self.targets)


def contains(folder: str, path: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def symbol_target(path: str, symbol: dict) -> dict:
    return {
        "path": path,
        "qualified_name": symbol["qualified_name"],
        "start_line": symbol["start_line"],
        "end_line": symbol["end_line"],
    }


@dataclass
class Pinned:
    """One repository's pinned tree: every path, its code files, their named symbols, its packages."""

    repo: QualityRepo
    root: Path
    paths: list[str]
    symbols: dict[str, list[dict]]  # code file -> its symbols (codecompass_dev/queries/extract_symbols.js)
    packages: list[str]  # folders holding a package.json ("" for the root)

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo.github}"

    @property
    def code(self) -> list[str]:
        return sorted(self.symbols)

    def known(self) -> frozenset[str]:
        """The names a sentence may open with in lowercase: the library's and its code's."""
        names = {s["name"] for symbols in self.symbols.values() for s in symbols}
        return frozenset(names | {self.repo.name, *(PurePosixPath(p).name for p in self.code_packages() if p)})

    def code_packages(self) -> list[str]:
        """Per code path, the innermost package folder holding it."""
        return sorted(
            {max((p for p in self.packages if contains(p, path)), key=len, default="") for path in self.repo.code_paths}
        )

    def other_packages(self) -> list[str]:
        """Package folders beside a code package (in the same parent folder) that hold no code path."""
        code = self.code_packages()
        parents = {parent(p) for p in code if p}
        return sorted(p for p in self.packages if p and parent(p) in parents and p not in code)

    def is_code(self, path: str) -> bool:
        """A file of the library's own code (models/corpus/concepts.py has the training corpus's rule)."""
        return is_code_file(self.repo, path)

    def definitions(self) -> dict[str, dict[tuple[str, str], dict]]:
        """API name -> (path, qualified name) -> symbol target: the code's functions, methods,
        classes and accessors, not those nested in a method (of overloads, the widest)."""
        by_name: dict[str, dict[tuple[str, str], dict]] = defaultdict(dict)
        for path, symbols in self.symbols.items():
            kinds = {s["qualified_name"]: s["kind"] for s in symbols}
            for s in symbols:
                if s["kind"] not in RUNTIME_KINDS or not s["has_body"] or s["name"] == "constructor":
                    continue
                if kinds.get(s["qualified_name"].rpartition(".")[0]) in _NESTING_KINDS:
                    continue
                key = (path, s["qualified_name"])
                old = by_name[s["name"]].get(key)
                if old is None or s["end_line"] - s["start_line"] > old["end_line"] - old["start_line"]:
                    by_name[s["name"]][key] = symbol_target(path, s)
        return by_name


def pinned_tree(repo: QualityRepo, mirror: Path, root: Path) -> Pinned:
    root.mkdir(parents=True)
    checkout_repo(repo, root)
    paths = sorted(git(mirror, "ls-tree", "-r", "--name-only", "-z", repo.commit).strip("\0").split("\0"))
    symbols = {record["path"]: record["symbols"] for record in extract(root, code_files(repo, root))}
    return Pinned(repo, root, paths, symbols, package_folders(paths))


def package_folders(paths: Iterable[str]) -> list[str]:
    """The folders holding a package.json ("" for the root), test and fixture folders left out."""
    return sorted(
        parent(p) for p in paths if PurePosixPath(p).name == "package.json" and not set(p.split("/")) & TEST_DIR_NAMES
    )


# --- Docs: docs-file and docs-api -------------------------------------------------------------


def doc_files(pinned: Pinned) -> list[str]:
    """The Markdown pages that document this library (module docstring, "Docs")."""
    others = pinned.other_packages()
    own = {w for p in pinned.code_packages() for w in split_identifier(PurePosixPath(p or pinned.repo.name).name)}
    other_words = {w for p in others for w in split_identifier(PurePosixPath(p).name)} - own
    out = []
    for rel in pinned.paths:
        parts = rel.split("/")
        folders = parts[:-1]
        if not rel.lower().endswith(DOC_SUFFIXES) or _NOT_DOCS.match(parts[-1]):
            continue
        if ".github" in folders or set(folders) & TEST_DIR_NAMES or any(contains(p, rel) for p in others):
            continue
        if any(folder.lower() in other_words for folder in folders):
            continue
        path = pinned.root / rel
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_DOC_BYTES:
            out.append(rel)
    return out


def named_files(text: str, pinned: Pinned, by_basename: dict[str, list[str]]) -> list[str]:
    """The code files a piece of Markdown names by path (module docstring, docs-file)."""
    found = []
    for match in _PATH.finditer(text):
        path = _BLOB.sub("", match.group(1)).split("#")[0]
        while path.startswith(("./", "../")):
            path = path.split("/", 1)[1]
        if "/" not in path:
            continue
        same_name = by_basename.get(path.rsplit("/", 1)[-1], [])
        owners = [path] if path in same_name else [p for p in same_name if p.endswith("/" + path)]
        if len(owners) == 1 and pinned.is_code(owners[0]) and owners[0] not in found:
            found.append(owners[0])
    return found


def api_names(spans: Iterable[str], not_names: frozenset[str]) -> list[str]:
    """The API names code spans write, in order (module docstring, docs-api)."""
    names = []
    for span in spans:
        match = _API_SPAN.match(span)
        if match:
            name = match.group(1).split(".")[-1]
            ok = len(name) >= MIN_NAME_CHARS and name.lower() not in not_names and name not in _FILE_NAME_ENDS
            if ok and name not in names:
                names.append(name)
    return names


def heading_spans(heading: str) -> list[str]:
    """What a heading writes as code: its code spans, or the heading itself when it is one name."""
    spans = code_spans(heading)
    if spans:
        return spans
    match = _NAME_HEADING.match(heading.strip())
    return [match.group(1)] if match else []


def docs_candidates(pinned: Pinned, stats: Counter) -> list[Candidate]:
    by_basename: dict[str, list[str]] = defaultdict(list)
    for path in pinned.paths:
        by_basename[path.rsplit("/", 1)[-1]].append(path)
    definitions = pinned.definitions()
    known = pinned.known()
    own_names = {pinned.repo.name.lower(), *(PurePosixPath(p).name.lower() for p in pinned.code_packages() if p)}
    not_names = _NOT_NAMES | own_names

    def defined(spans: Iterable[str]) -> list[str]:
        return [
            n
            for n in api_names(spans, not_names)
            if n in definitions and len({p for p, _ in definitions[n]}) <= MAX_DEFINING_FILES
        ]

    out = []
    for rel in doc_files(pinned):
        stats["doc_pages"] += 1
        raw = (pinned.root / rel).read_text(encoding="utf-8", errors="replace")
        raw_sections = {s.line: s for s in sections(raw, lead=True)}
        for section in sections(strip_comments(raw), lead=True):
            stats["doc_sections"] += 1
            where = {"kind": "", "url": pinned.url, "file": rel, "line": 0, "heading": section.heading}
            # Paths are looked for in the raw text: `<!-- source_link=lib/x.js -->` is a comment.
            original = raw_sections.get(section.line, section)
            files = named_files("\n".join([original.heading, *outside_fences(original.body)]), pinned, by_basename)
            if files:
                if len(files) > MAX_DOC_FILES:
                    stats["docs-file_too_many_files"] += 1
                    continue
                picked = first_pick(section.prose(whole_blocks=True), names_of(files, []), known)
                if picked is None:
                    stats["docs-file_no_explanatory_sentence"] += 1
                    continue
                line, sentence, leaked = picked
                source = {**where, "kind": "docs-file", "line": line}
                out.append(Candidate("docs-file", sentence, files, [], leaked, source))
                continue
            # A heading that names API is about it (if only names too common to place, the section
            # is skipped); else a paragraph that names API in code spans is about that.
            in_heading = [n for n in api_names(heading_spans(section.heading), not_names) if n in definitions]
            by_heading = defined(in_heading)
            if in_heading and not by_heading:
                stats["docs-api_heading_name_too_common"] += 1
                continue
            raw_prose = section.prose(plain=False, whole_blocks=True)
            for (line, raw_paragraph), (_, paragraph) in zip(raw_prose, section.prose(whole_blocks=True), strict=True):
                named = by_heading or defined(code_spans(raw_paragraph))
                if not named:
                    continue
                symbols = [t for n in named for t in definitions[n].values()]
                files = sorted({t["path"] for t in symbols})
                if len(files) > MAX_DOC_FILES:
                    stats["docs-api_too_many_files"] += 1
                    if by_heading:
                        break
                    continue
                picked = pick_sentence(paragraph, names_of(files, named), known)
                if picked is None:
                    continue
                if len(symbols) > MAX_SYMBOL_TARGETS:
                    stats["docs-api_symbols_too_many"] += 1
                    symbols = []
                names_from = "heading" if by_heading else "paragraph"
                source = {**where, "kind": "docs-api", "line": line, "names_from": names_from}
                out.append(Candidate("docs-api", picked[0], files, symbols, picked[1], source))
                stats[f"docs-api_named_by_{names_from}"] += 1
                break
    return out


# --- package: package.json descriptions and folder READMEs -----------------------------------


def entry_file(pinned: Pinned, package: str, manifest: dict) -> str | None:
    """The code file a package's manifest names as its entry, mapped back to the source."""

    def leaves(value: object) -> Iterator[object]:
        if isinstance(value, dict):
            for item in value.values():
                yield from leaves(item)
        else:
            yield value

    exports = manifest.get("exports")
    dot = exports.get(".") if isinstance(exports, dict) else exports
    listed = [p for p in (manifest.get("source"), *leaves(dot), manifest.get("main"), manifest.get("module"))
              if isinstance(p, str)]  # fmt: skip
    in_package = [
        str(PurePosixPath(package, p.removeprefix("./"))) if package else p.removeprefix("./") for p in listed
    ]
    for path in in_package:
        if path in pinned.symbols:
            return path
    own = [p for p in pinned.code if contains(package, p)]
    for path in listed:
        for wanted in (PurePosixPath(path).name.split(".")[0], "index"):
            named = [p for p in own if PurePosixPath(p).name.split(".")[0] == wanted]
            if named:
                return min(named, key=lambda p: (p.count("/"), p))
    return None


def package_candidates(pinned: Pinned, stats: Counter) -> list[Candidate]:
    known = pinned.known()
    out = []
    for package in pinned.code_packages():
        rel = f"{package}/package.json" if package else "package.json"
        try:
            manifest = json.loads((pinned.root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = None  # code in no package folder (no root package.json), or a manifest not JSON
        description = " ".join(str(manifest.get("description", "")).split()) if isinstance(manifest, dict) else ""
        entry = entry_file(pinned, package, manifest) if description else None
        if not description or entry is None or not explanatory(description, known):
            stats["package_no_description_entry_or_sentence"] += 1
            continue
        leaked = leaks(description, names_of([entry], []))
        source = {"kind": "package", "url": pinned.url, "file": rel, "line": 0, "field": "description"}
        out.append(Candidate("package", description, [entry], [], leaked, source))
    for rel in pinned.paths:
        folder, _, name = rel.rpartition("/")
        if name.lower() != "readme.md" or not any(contains(p, folder) for p in pinned.repo.code_paths):
            continue
        if folder in pinned.packages:
            continue  # a package's README: its description speaks for the package, its entry answers
        files = [p for p in pinned.code if parent(p) == folder]
        if not 1 <= len(files) <= MAX_README_FILES:
            stats["package_readme_files_out_of_range"] += 1
            continue
        text = strip_comments((pinned.root / rel).read_text(encoding="utf-8", errors="replace"))
        paragraphs = [p for s in sections(text, lead=True) for p in s.prose(whole_blocks=True)]
        picked = first_pick(paragraphs, names_of(files, []), known)
        if picked is None:
            stats["package_readme_no_sentence"] += 1
            continue
        line, sentence, leaked = picked
        source = {"kind": "package", "url": pinned.url, "file": rel, "line": line}
        out.append(Candidate("package", sentence, files, [], leaked, source))
    return out


# --- commit-body -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BodyCommit:
    sha: str
    date: str
    subject: str
    body: str


def body_commits(mirror: Path, pinned: str, pathspecs: Sequence[str], max_commits: int) -> list[BodyCommit]:
    out = git(
        mirror, "log", "--no-merges", f"--max-count={max_commits}", "--format=%H%x1f%cI%x1f%s%x1f%b%x1e",
        pinned, "--", *pathspecs,
    )  # fmt: skip
    commits = []
    for record in out.split("\x1e"):
        if record.strip():
            sha, date, subject, body = record.strip("\n").split("\x1f", 3)
            commits.append(BodyCommit(sha, date, subject, body))
    return commits


def body_paragraphs(body: str) -> Iterator[tuple[int, str]]:
    """The prose of a commit body (1-based lines): trailers and separator lines left out."""
    lines = [
        "" if _TRAILER.match(line) or _RULE_LINE.match(line) else line for line in strip_comments(body).splitlines()
    ]
    return prose_paragraphs(lines, whole_blocks=True)


def body_sentence(body: str, subject_query: str, known: frozenset[str]) -> tuple[int, str] | None:
    """(line, sentence): the body's first explanatory sentence, unless it says the subject again."""
    for line, paragraph in body_paragraphs(body):
        for sentence in explanatory_sentences(paragraph, known):
            if words(sentence) != words(subject_query):
                return line, sentence
    return None


def commit_candidates(pinned: Pinned, mirror: Path, max_commits: int, stats: Counter) -> list[Candidate]:
    repo = pinned.repo
    known = pinned.known()
    chosen: list[tuple[BodyCommit, tuple[int, str], list, list[bytes]]] = []
    for commit in body_commits(mirror, repo.commit, repo.code_paths, max_commits):
        stats["commits"] += 1
        subject_query = clean_subject(commit.subject)
        if subject_query is None:
            stats["commit_not_a_behaviour_change"] += 1
            continue
        picked = body_sentence(commit.body, subject_query, known)
        if picked is None:
            stats["commit_no_explanatory_body"] += 1
            continue
        try:
            changes = [
                c
                for c in diff_changes(mirror, commit.sha, repo.code_paths, pinned.is_code)
                if c.changed or c.deletions
            ]
            if not MIN_COMMIT_FILES <= len(changes) <= MAX_COMMIT_FILES:
                stats["commit_files_out_of_range"] += 1
                continue
            posts = [git_bytes(mirror, "show", f"{commit.sha}:{c.path}") for c in changes]
        except MirrorError:
            stats["commit_unreadable"] += 1
            continue
        alive = [c.path for c in changes if c.path in pinned.symbols]
        if len(alive) < MIN_COMMIT_FILES or 2 * len(alive) < len(changes):
            stats["commit_files_gone_at_pin"] += 1
            continue
        chosen.append((commit, picked, changes, posts))
    with tempfile.TemporaryDirectory(prefix="concepts-") as tmp:
        root = Path(tmp)
        rels = []
        for commit, _, changes, posts in chosen:
            for change, data in zip(changes, posts, strict=True):
                target = root / commit.sha / change.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                rels.append(f"{commit.sha}/{change.path}")
        post = symbols_by_path(root, rels) if rels else {}
    out = []
    for commit, (line, sentence), changes, _ in chosen:
        files = sorted(c.path for c in changes if c.path in pinned.symbols)
        symbols = []
        for change in changes:
            if change.path in pinned.symbols:
                for name in sorted(touched_symbols(change, post.get(f"{commit.sha}/{change.path}", []))):
                    symbol = pinned_symbol(pinned.symbols[change.path], name)
                    if symbol is not None:
                        symbols.append(symbol_target(change.path, symbol))
        if len(symbols) > MAX_SYMBOL_TARGETS:
            stats["commit_symbols_too_many"] += 1
            symbols = []
        leaked = leaks(sentence, names_of(files, [t["qualified_name"] for t in symbols]))
        source = {
            "kind": "commit-body", "url": pinned.url, "commit": commit.sha, "date": commit.date,
            "subject": commit.subject, "line": line, "files_in_commit": len(changes),
        }  # fmt: skip
        out.append(Candidate("commit-body", sentence, files, symbols, leaked, source))
    return out
