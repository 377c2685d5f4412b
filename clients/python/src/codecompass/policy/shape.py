"""What a query looks like, judged once per search.

Every decision that depends on the shape of the query text (which channels run, how much
the semantic channel may weigh, which ranking signals apply) reads one `QueryShape`, so the
rules live here and nowhere else.

Intents (seed 003/004):
- `path`: a file path or file name (`operators/mergeMap.ts`, `retry.js`): the user wants
  that file;
- `symbol`: one or a few code-shaped tokens (`validateToken`, `Foo.bar`, `parse_url()`,
  `HTTPServer`): the user wants that definition;
- `error`: an error message or log line: quoted text, or a sentence shaped like a message
  (`Cannot read properties of undefined`): the user wants the code that says it;
- `natural_language`: everything else (questions, commit-style descriptions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codecompass.common.identifiers import TOKEN, identifier_parts, letter_classes
from codecompass.common.testcode import mentions_tests as query_mentions_tests

SYMBOL = "symbol"
PATH = "path"
ERROR = "error"
NATURAL_LANGUAGE = "natural_language"
INTENTS = (SYMBOL, PATH, ERROR, NATURAL_LANGUAGE)

SOURCE_EXTENSIONS = ("ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "json", "d.ts")
# A path-shaped token: segments joined by '/' (optionally ending in a source extension), or a
# bare file name with a known extension. `a/b` alone is too ambiguous ("and/or") to count.
_PATH_TOKEN = re.compile(
    r"^(?:\.{0,2}/)?(?:[\w@.$-]+/)+[\w@.$-]+\.(?:" + "|".join(re.escape(e) for e in SOURCE_EXTENSIONS) + r")$"
    r"|^(?:[\w@.$-]+/){2,}[\w@.$-]+/?$"
    r"|^[\w@$-]+(?:\.[\w-]+)*\.(?:" + "|".join(re.escape(e) for e in SOURCE_EXTENSIONS) + r")$"
)
# Identifiers in letters of any script, as JS/TS allows (`[^\W\d]`: a letter or `_`).
_IDENT = re.compile(r"(?:[^\W\d]|\$)[\w$]*")
_DOTTED = re.compile(r"^(?:[^\W\d]|\$)[\w$]*(?:(?:\.|#|::)(?:[^\W\d]|\$)[\w$]*)+(?:\(\))?$")
_WORD = TOKEN
_CALL_ARGS = re.compile(r"\([^()]*\)$")
_QUOTED = re.compile(r"""["'`]([^"'`]{3,})["'`]""")
# Words that open a question or a request: the query is addressed to a person, not quoted
# from a program.
_QUESTION_OPENERS = frozenset(
    ["how", "what", "where", "which", "who", "why", "when", "does", "do", "is", "are", "can", "should", "find", "show",
     "explain", "list", "get", "fix", "add", "remove", "support", "handle", "make", "use", "allow", "avoid"]
)
STOP_WORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "been", "being", "by", "can", "could", "did", "do", "does", "doing",
     "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not",
     "of", "on", "or", "our", "so", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
     "those", "to", "too", "via", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why",
     "will", "with", "would", "you", "your"]
)
# Words that make a capitalised statement read like a program's message rather than a request.
_MESSAGE_WORDS = frozenset({
    "must", "cannot", "can't", "expected", "invalid", "not", "missing", "unexpected", "unknown", "failed",
    "unsupported", "undefined", "null", "required", "only", "should",
})
# Words of a request or a change description rather than of the code it is about.
# Words a question in words opens with (seed 002's list: "does it retry", "explain the cache").
_QUESTION_WORDS = frozenset({"how", "what", "where", "why", "which", "when", "who", "does", "do", "is", "are",
                             "can", "should", "explain", "show", "find"})
REQUEST_WORDS = frozenset({
    "fix", "fixes", "fixed", "fixing", "bug", "bugs", "issue", "issues", "add", "adds", "added", "adding",
    "support", "supports", "handle", "handles", "handling", "ensure", "ensures", "allow", "allows", "make", "makes",
    "improve", "improves", "correctly", "properly", "avoid", "avoids", "prevent", "prevents", "feat", "refactor",
    "implement", "implements", "how", "where", "why", "what", "does", "do", "should", "now", "also", "instead",
})


# Longer than any question, error message or stack trace a person pastes: that is a whole file
# or log. The lexical channel's cost grows with every word (120 kB of identifiers took 11 s), and
# the embedding model reads only the first few hundred tokens, so such a query is refused with
# the limit rather than cut silently.
MAX_QUERY_CHARS = 10_000


def length_problem(query: str) -> str | None:
    """Why ``query`` is too long to search, or None."""
    if len(query) <= MAX_QUERY_CHARS:
        return None
    return (f"query too long: {len(query):,} characters (the limit is {MAX_QUERY_CHARS:,}); "
            "search with the lines that matter")


def is_code_shaped(token: str) -> bool:
    """camelCase, PascalCase with an inner capital, snake_case, `$x`, dotted `a.b`, `f()`: a
    token that is an identifier (or a path to one) rather than an English word."""
    t = _CALL_ARGS.sub("", token.strip())
    if not t:
        return False
    if _DOTTED.match(t):
        return True
    if not _IDENT.fullmatch(t):
        return False
    inner = t.strip("_")
    return (
        "_" in inner
        or "$" in t
        or bool(re.search(r"LU|U{2,}L|UL+U", letter_classes(t)))
        or (t[0] == "_" and len(t) > 1)
    )


@dataclass(frozen=True)
class QueryShape:
    text: str
    intent: str
    # How sure the classification is, in [0, 1] (reported; the gateway may ask for help when low).
    intent_confidence: float
    # Identifiers the user typed, as written: every code-shaped token, or the single word of a
    # one-word query. A chunk whose name equals one of these defines what was asked for.
    identifiers: tuple[str, ...]
    # Lowercased content words (identifiers split into parts, stop words removed).
    words: tuple[str, ...]
    # Every word as a name part, stop words kept: names are made of them too (`elementAt`,
    # `hasParser`, `onTick`).
    name_parts: tuple[str, ...]
    # The path-shaped token, normalised (no leading ./, forward slashes); "" when none.
    path: str
    # Text to look for verbatim in code (an error message or a quoted string); "" when none.
    phrase: str
    # The query is about tests: test files are what the user wants, not noise.
    mentions_tests: bool
    # What the full-text channel searches: the query without the words that address a person
    # ("fix", "how does", "add support for"), which match comments and unrelated code.
    lexical_text: str = ""
    # A question in words ("how does X run Y", "where is Z validated?", "explain the cache"):
    # often about how a part of the system works, which a file answers as often as a symbol
    # does; also seed 002's cue to rewrite the query.
    question: bool = False

    @property
    def name_lookup(self) -> bool:
        """The query is only names (`parseConfig`, `Router.handle`, `useState useEffect`): a
        lookup whose answer is the named code, so a name no chunk has means nothing here answers
        it. A sentence that mentions a name (`allow interceptors without opts.origin`) is not one.
        Derived from the text, so it needs no field of its own on the wire."""
        tokens = self.text.split(" ") if self.text else []
        return self.intent == SYMBOL and (len(tokens) == 1 or all(is_code_shaped(_bare(t)) for t in tokens))


def analyze(query: str) -> QueryShape:
    text = " ".join(query.split())
    tokens = text.split(" ") if text else []
    raw_words = [w for w in _WORD.findall(text)]
    lowered = [w.lower() for w in raw_words]
    mentions_tests = query_mentions_tests(lowered)

    path = ""
    for token in tokens:
        candidate = token.strip("'\"`,;:()[]<>")
        if _PATH_TOKEN.match(candidate):
            path = candidate.removeprefix("./").lstrip("/")
            break

    code_tokens = [
        _bare(t) for t in tokens if is_code_shaped(_bare(t)) and not _PATH_TOKEN.match(t.strip("'\"`,;:()[]<>"))
    ]
    identifiers: list[str] = []
    for token in code_tokens:
        token = _CALL_ARGS.sub("", token)
        identifiers.append(token)
        for separator in (".", "#", "::"):
            if separator in token and len(tokens) == 1:
                # `Foo.bar` alone names `bar` inside `Foo`: both the full path and the last name
                # count. Inside a sentence (`invalid options.signal`) it is a mention, not a name.
                identifiers.append(token.rsplit(separator, 1)[-1])
                break
    if not identifiers and len(tokens) == 1 and _IDENT.fullmatch(tokens[0].removesuffix("()")):
        identifiers.append(tokens[0].removesuffix("()"))

    words: list[str] = []
    name_parts: list[str] = []
    for word in raw_words:
        for part in identifier_parts(word) or [word.lower()]:
            if part not in name_parts:
                name_parts.append(part)
            if part not in STOP_WORDS and part not in words:
                words.append(part)

    quoted = _QUOTED.search(query)
    intent, confidence, phrase = _classify(text, tokens, lowered, path, code_tokens, quoted)
    return QueryShape(
        text=text,
        intent=intent,
        intent_confidence=confidence,
        identifiers=tuple(dict.fromkeys(identifiers)),
        words=tuple(words),
        name_parts=tuple(name_parts),
        path=path,
        phrase=phrase,
        mentions_tests=mentions_tests,
        lexical_text=_lexical_text(text, intent, raw_words),
        question=bool(lowered) and (lowered[0] in _QUESTION_WORDS or text.endswith("?")),
    )


def _bare(token: str) -> str:
    return token.strip("'\"`,;:[]<>")


def _lexical_text(text: str, intent: str, raw_words: list[str]) -> str:
    if intent != NATURAL_LANGUAGE:
        return text
    kept = [w for w in raw_words if w.lower() not in REQUEST_WORDS]
    if not any(w.lower() not in STOP_WORDS for w in kept):
        return text
    return " ".join(kept)


def _classify(
    text: str,
    tokens: list[str],
    lowered: list[str],
    path: str,
    code_tokens: list[str],
    quoted: re.Match[str] | None,
) -> tuple[str, float, str]:
    if not tokens:
        return NATURAL_LANGUAGE, 0.0, ""
    if path and len(tokens) <= 3:
        return PATH, 0.95 if len(tokens) == 1 else 0.7, ""
    if len(tokens) == 1 and (_IDENT.fullmatch(tokens[0].removesuffix("()")) or _DOTTED.match(tokens[0])):
        # A lowercase English word (`session`) is as likely a topic as a name.
        return SYMBOL, 0.95 if code_tokens else 0.6, ""
    if code_tokens and len(code_tokens) == len(tokens) and len(tokens) <= 3:
        return SYMBOL, 0.9, ""
    if quoted:
        return ERROR, 0.85, quoted.group(1).strip()
    if _looks_like_message(text, tokens, lowered):
        return ERROR, 0.6, text.rstrip(".")
    if code_tokens and len(tokens) <= 4:
        return SYMBOL, 0.55, ""
    return NATURAL_LANGUAGE, 0.8 if len(tokens) >= 4 else 0.6, ""


def _looks_like_message(text: str, tokens: list[str], lowered: list[str]) -> bool:
    """A sentence quoted from a program: an `Error:`-style prefix, or a capitalised statement of
    three or more words that is not a question or request ("Expected a function but got null",
    "Cannot read properties of undefined")."""
    if re.match(r"^[A-Z][A-Za-z]*(?:Error|Exception)\b:?", text):
        return True
    if len(tokens) < 2 or text.endswith("?") or not lowered:
        return False
    if lowered[0] in _QUESTION_OPENERS:
        return False
    first = tokens[0]
    return first[:1].isupper() and not first.isupper() and any(w in _MESSAGE_WORDS for w in lowered)
