"""Reading one symbol instead of its whole file (`read_symbol`): what the text names (a file, a
`path:line`, a qualified name), resolved by the type checker, its members collapsed but for those
asked for, or a file's outline. How the view reads is `present`'s business."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.errors import NOT_FOUND, ServiceError
from codecompass.contracts.analysis.model import ChunkedFile, RenderRequest, TraceDirection, TraceQuery, TraceRoot
from codecompass_gateway.errors import NOT_FOUND_CODE, ToolInputError, not_found_as_input

_LOCATION = re.compile(r"^(?P<path>.+):(?P<line>\d+)$")


@dataclass(frozen=True)
class Window:
    """The lines shown of a symbol too long to show whole, around the line `path:LINE` named."""

    focus_line: int
    start_line: int
    end_line: int


@dataclass(frozen=True)
class SymbolView:
    root: TraceRoot
    source: str
    token_count: int
    expanded: tuple[str, ...] = ()
    not_found: tuple[str, ...] = ()
    window: Window | None = None


def workspace_file(workspace: Path, text: str) -> str | None:
    """`text` as a workspace-relative file path when it names a file inside the workspace."""
    candidate = Path(text.strip())
    path = (candidate if candidate.is_absolute() else workspace / candidate).resolve()
    try:
        relative = path.relative_to(workspace)
    except ValueError:
        return None
    return relative.as_posix() if path.is_file() else None


def location_of(symbol: str) -> tuple[str, int] | None:
    match = _LOCATION.match(symbol.strip())
    return (match["path"], int(match["line"])) if match else None


def expand_name(root: TraceRoot, name: str) -> str:
    """A child name as a qualified name: `validateToken` under `TokenService`, or already qualified."""
    name = name.strip()
    return name if name.startswith(root.qualified_name + ".") else f"{root.qualified_name}.{name}"


def resolve_query(workspace: Path, symbol: str, relative_path: str = "") -> TraceQuery:
    """A trace that only resolves `symbol`: supertypes is the direction that costs no reference
    search, and a limit of one keeps the walk to one step."""
    return TraceQuery(workspace_root=str(workspace), symbol=symbol, relative_path=relative_path,
                      direction=TraceDirection.SUPERTYPES, depth=1, limit=1)


def render_request(root: TraceRoot, child_ids: list[str]) -> RenderRequest:
    return RenderRequest(symbol_id=root.chunk_id, expand_child_ids=tuple(child_ids), relative_path=root.relative_path)


def read(analysis: AnalysisClient, workspace: Path, text: str, expand: Sequence[str], relative_path: str,
         timeout_s: float) -> SymbolView | ChunkedFile:
    """What `text` names: a file inside the workspace reads as its chunks (the outline), anything
    else as the symbol it resolves to, with the members named in `expand` in full. A failure the
    caller can fix raises `ToolInputError`."""
    location = location_of(text)
    file_path = workspace_file(workspace, text) if location is None else None
    if file_path is not None:
        with not_found_as_input("give a path relative to the workspace"):
            return analysis.file_chunks(str(workspace), file_path, timeout_s)
    with not_found_as_input("check the spelling, give path:line, or a file path for its outline"):
        resolved = analysis.trace(resolve_query(workspace, text, relative_path), timeout_s).root
    if not resolved.chunk_id:
        raise ToolInputError(f"{text} resolves to {resolved.qualified_name or 'a location'} in "
                             f"{resolved.relative_path}, which is not a declaration that can be shown")
    view_expanded: list[tuple[str, str, str]] = []  # (chunk id, qualified name, name as given)
    not_found: list[str] = []
    child_ids: list[str] = []
    for name in expand:
        if not name.strip():
            continue
        qualified = expand_name(resolved, name)
        try:
            child = analysis.trace(resolve_query(workspace, qualified, resolved.relative_path), timeout_s).root
        except ServiceError as exc:
            if exc.kind != NOT_FOUND:
                raise
            not_found.append(name.strip())
            continue
        if child.chunk_id and child.chunk_id != resolved.chunk_id:
            child_ids.append(child.chunk_id)
            view_expanded.append((child.chunk_id, child.qualified_name, name.strip()))
        else:
            not_found.append(name.strip())
    # `path:LINE` inside a symbol too long to show whole shows the lines around LINE.
    request = dataclasses.replace(render_request(resolved, child_ids),
                                  focus_line=location[1] if location is not None else 0)
    (shown,) = analysis.render(str(workspace), [request], timeout_s)
    if shown is None:
        raise ToolInputError(f"{resolved.qualified_name} is no longer in {resolved.relative_path}; "
                             "the file changed: search again", NOT_FOUND_CODE)
    window = (Window(location[1], shown.window_start_line, shown.window_end_line)
              if shown.window_start_line and location is not None else None)
    # A name that resolved elsewhere (not under this symbol) was not expanded: say so.
    not_found += [given for child_id, _, given in view_expanded if child_id in shown.unknown_child_ids]
    expanded_names = [qualified for child_id, qualified, _ in view_expanded
                      if child_id not in shown.unknown_child_ids]
    return SymbolView(root=dataclasses.replace(resolved, start_line=shown.start_line or resolved.start_line,
                                               end_line=shown.end_line or resolved.end_line),
                      source=shown.source, token_count=shown.token_count, expanded=tuple(expanded_names),
                      not_found=tuple(not_found), window=window)
