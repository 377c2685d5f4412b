"""The retrieval service's errors: what its servicer maps to gRPC status codes, and what the
clients of the services it depends on (analysis, embedding) raise in its terms."""

from __future__ import annotations


class RetrievalError(Exception):
    """Base of the errors the servicer maps to gRPC status codes."""


class InvalidWorkspace(RetrievalError):
    """The request names no usable workspace root (missing or relative)."""


class IndexRefused(InvalidWorkspace):
    """A workspace the service does not index unless the request forces it (see `guards`)."""


class InvalidQuery(RetrievalError):
    """A request that cannot be answered as asked (empty query, bad ratio, bad workspace id...)."""


class WrongRole(RetrievalError):
    """A call this process's role does not serve: syncs go to the index writer, reads to
    searchers (retrieval.role)."""


class IndexNotFound(RetrievalError):
    """No index exists for the workspace (DropIndex of an unknown id)."""


class WorkspaceNotFound(RetrievalError):
    """The workspace root does not exist or is not a directory."""


class DependencyUnavailable(RetrievalError):
    """A service this one depends on could not be reached in time."""


class AnalysisUnavailable(DependencyUnavailable):
    def __init__(self, addr: str, detail: str) -> None:
        super().__init__(f"analysis service unreachable at {addr}: {detail}")
        self.addr = addr


class AnalysisTimedOut(DependencyUnavailable):
    """The analysis service answers but a stage ran past its deadline: slow, not dead."""

    def __init__(self, addr: str, stage: str, timeout_s: float) -> None:
        super().__init__(
            f"the analysis service at {addr} did not finish {stage} within {timeout_s:g} s "
            "(that stage's deadline; CODECOMPASS_RPC_TIMEOUT_S sets it)"
        )
        self.addr = addr


class EmbeddingUnavailable(DependencyUnavailable):
    def __init__(self, addr: str, detail: str) -> None:
        super().__init__(f"embedding service unreachable at {addr}: {detail}")
        self.addr = addr


class AnalysisFailed(RetrievalError):
    """The analysis service answered with an error that retrying will not fix."""


class EmbeddingFailed(RetrievalError):
    """The embedding service answered with an error that retrying the same input will not fix."""
