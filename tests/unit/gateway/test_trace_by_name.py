"""codebase_trace's answer when the type checker could not see every site: each node found by
name says so ([by name] in the text, resolved_by in the structured answer), and the answer is
partial (unresolved), never "complete"."""

from __future__ import annotations

from codecompass_gateway import present

from codecompass.contracts.analysis.model import (
    TraceDirection,
    TraceNode,
    TraceOutcome,
    TracePartialReason,
    TraceResolution,
    TraceRoot,
)

ROOT = TraceRoot("lib/reply.js", "reply.deliver", 13, 20, "id-deliver")
BY_NAME = TraceNode("lib/reply.js", "reply.asJson", "id-json", 26, "return this.deliver(text);", 1,
                    TraceResolution.NAME)
BY_CHECKER = TraceNode("lib/app.js", "main", "id-main", 4, "reply.deliver('hi');", 1)


def test_name_matches_are_marked_and_the_answer_is_not_complete() -> None:
    outcome = TraceOutcome(ROOT, (BY_CHECKER, BY_NAME), True, TracePartialReason.UNRESOLVED, 2)
    lines = present.trace_text(outcome, TraceDirection.CALLERS, 1).splitlines()
    assert lines[1].startswith("2 shown of 2 found — partial (unresolved; the type checker could not resolve "
                               "some sites")
    assert "complete" not in lines[1]
    assert lines[2:] == ["lib/app.js:4  main  — reply.deliver('hi');",
                         "lib/reply.js:26  reply.asJson  — return this.deliver(text);  [by name]"]
    structured = present.trace_structured(outcome, TraceDirection.CALLERS)
    assert [n["resolved_by"] for n in structured["nodes"]] == ["checker", "name"]
    assert (structured["partial"], structured["partial_reason"]) == (True, "unresolved")


def test_no_node_even_by_name_says_so() -> None:
    outcome = TraceOutcome(ROOT, (), True, TracePartialReason.UNRESOLVED, 0)
    assert present.trace_text(outcome, TraceDirection.CALLEES, 1).splitlines()[-1].endswith(
        "in the workspace, nor did a search by name")
