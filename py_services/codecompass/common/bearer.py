"""Bearer tokens: what one may look like, where they are read from, and how a rotation reaches a
running process. One set of rules for the MCP gateway's HTTP server (`codecompass_gateway.remote`)
and for the gRPC services and their clients (`codecompass.common.transport`).

A token comes from a variable (read once, at start) or from a token file: one token a line, blank
lines and `#` lines aside, the current one first and every one accepted. The file is read again
whenever it changes (`BearerTokens`), so a token rotates with no restart: a server accepts the new
token as soon as its line is in the file, a client sends whichever is first.
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
from pathlib import Path

# Not common.logging's get_logger: that module imports the config package, which checks token
# files with this one. Records reach the process's handlers all the same.
log = logging.getLogger("codecompass.bearer")

# The shortest bearer token a server accepts: 16 characters of a random token
# (`secrets.token_urlsafe`) carry 96 bits, beyond guessing over a network.
MIN_TOKEN_CHARS = 16
MAKE_ONE = "make one with `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`"


class TokenRefused(ValueError):
    """A token or token file that must not be used; the message says why, in one line, and never
    holds a token."""


def long_enough(tokens: tuple[str, ...], source: str) -> tuple[str, ...]:
    """`tokens`, or TokenRefused when one is shorter than MIN_TOKEN_CHARS: a short token can be
    guessed by anyone who can reach the port, so it locks nothing."""
    for token in tokens:
        if len(token) < MIN_TOKEN_CHARS:
            raise TokenRefused(f"the bearer token from {source} is {len(token)} character{'s' * (len(token) != 1)} "
                               f"long: a token must have at least {MIN_TOKEN_CHARS} characters; {MAKE_ONE}")
    return tokens


def read_token_file(path: Path, setting: str) -> tuple[str, ...]:
    """The tokens `path` holds, the current one first; TokenRefused when it holds none or a short
    one. `setting` names the setting the file came from, for the message."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise TokenRefused(f"{setting} {path}: cannot read it ({reason})") from None
    tokens = tuple(dict.fromkeys(line.strip() for line in text.splitlines()
                                 if line.strip() and not line.strip().startswith("#")))
    if not tokens:
        raise TokenRefused(f"{setting} {path}: it holds no token (one a line, the current one first)")
    return long_enough(tokens, f"{setting} {path}")


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when the file does: a Kubernetes Secret volume swaps a symlink (another
    inode), an editor rewrites in place (another mtime or size)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size


class BearerTokens:
    """The tokens of a variable (`token`, fixed) or of a token file as it stands (`file`, whose
    setting `setting` names). The file is stat'ed on each use (microseconds) and read again when it
    changed; a file that cannot be read or holds no token then (a write caught half-way, a Secret
    being swapped) keeps the tokens it last held, so a rotation never opens a server nor locks
    everyone out. TokenRefused at construction when there is no usable token."""

    def __init__(self, *, token: str | None = None, file: Path | None = None, setting: str = "") -> None:
        self._file = None if token else file
        self._setting = setting
        if self._file is not None:
            self._stamp = _stamp(self._file)
            tokens = read_token_file(self._file, setting)
        elif token:
            tokens = long_enough((token,), setting)
        else:
            raise TokenRefused(f"{setting}: no token set")
        # The tokens and their bytes, swapped as one so that a reader never sees half a rotation.
        self._state = (tokens, tuple(t.encode() for t in tokens))
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        """Where the tokens come from, for log lines: never a token."""
        return f"{self._setting} {self._file}" if self._file is not None else self._setting

    def current(self) -> str:
        """The token a client sends: the file's first."""
        return self._refreshed()[0][0]

    def accepts(self, given: bytes) -> bool:
        matched = False
        # Every token compared, each in constant time: which one matched must not show either.
        for token in self._refreshed()[1]:
            matched |= hmac.compare_digest(given, token)
        return matched

    def _refreshed(self) -> tuple[tuple[str, ...], tuple[bytes, ...]]:
        if self._file is None:
            return self._state
        stamp = _stamp(self._file)
        if stamp == self._stamp:
            return self._state
        with self._lock:
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    tokens = read_token_file(self._file, self._setting)
                except TokenRefused as exc:
                    log.warning("kept the bearer tokens read before: %s", exc)
                else:
                    self._state = (tokens, tuple(t.encode() for t in tokens))
                    # How many, never which.
                    log.info("bearer tokens read again", extra={"token_file": str(self._file),
                                                                "tokens": len(tokens)})
            return self._state
