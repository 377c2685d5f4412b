"""`codecompass chunks` against the real Node analysis service."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from codecompass.common.chunks import Chunk


@pytest.fixture
def analysis_env(analysis_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ANALYSIS_ADDR", analysis_server)
    return analysis_server


@pytest.mark.usefixtures("analysis_env")
def test_json_output_is_one_complete_chunk_per_line(run_cli, sample_workspace: Path) -> None:
    result = run_cli("chunks", str(sample_workspace / "src" / "auth"), "--json")
    assert result.code == 0, result.err
    chunks = result.json_lines()
    assert {c["relative_path"] for c in chunks} == {
        "src/auth/jwt.ts", "src/auth/middleware.ts", "src/auth/tokenService.ts"}
    field_names = {f.name for f in dataclasses.fields(Chunk)}
    for chunk in chunks:
        assert set(chunk) == field_names
        lines = (sample_workspace / chunk["relative_path"]).read_text().splitlines()
        source_lines = chunk["full_source"].splitlines()
        # The symbol's text spans exactly its lines (it may start after indentation).
        assert len(source_lines) == chunk["end_line"] - chunk["start_line"] + 1
        assert lines[chunk["start_line"] - 1].endswith(source_lines[0])
        assert source_lines[1:] == lines[chunk["start_line"]:chunk["end_line"]]
    by_name = {c["qualified_name"]: c for c in chunks}
    validate = by_name["TokenService.validateToken"]
    assert validate["node_kind"] == "method"
    assert validate["parent_id"] == by_name["TokenService"]["id"]
    assert "3 files, " in result.err


@pytest.mark.usefixtures("analysis_env")
def test_human_output_is_a_tree_per_file(run_cli, sample_workspace: Path) -> None:
    result = run_cli("chunks", str(sample_workspace / "src" / "auth" / "tokenService.ts"))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("src/auth/tokenService.ts  ok  ")
    assert any(line.startswith("  class TokenService  L") for line in lines)
    assert any(line.startswith("    method TokenService.validateToken  L") and line.endswith(" tok")
               for line in lines)


@pytest.mark.usefixtures("analysis_env")
def test_references_are_resolved_on_request(run_cli, sample_workspace: Path) -> None:
    result = run_cli("chunks", str(sample_workspace / "src" / "auth" / "middleware.ts"), "--json", "--references")
    assert result.code == 0, result.err
    (require_auth,) = [c for c in result.json_lines() if c["name"] == "requireAuth"]
    assert "TokenService" in {ref["name"] for ref in require_auth["references"]}


@pytest.mark.usefixtures("analysis_env")
def test_skipped_files_print_their_reason(run_cli, tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text("{}")
    (tmp_path / "ok.ts").write_text("export function ok(): number {\n  return 1;\n}\n")
    (tmp_path / "bundle.js").write_text("var a=" + "1+" * 30000 + "1;\n")
    human = run_cli("chunks", str(tmp_path))
    assert human.code == 0, human.err
    # The function and the file's card.
    assert "ok.ts  ok  2 chunks" in human.out
    assert "bundle.js  skipped  minified" in human.out
    as_json = run_cli("chunks", str(tmp_path), "--json")
    assert [c["name"] for c in as_json.json_lines()] == ["<module top level>", "ok"]
    assert "bundle.js  skipped  minified" in as_json.err


@pytest.mark.usefixtures("analysis_env")
def test_bad_paths_are_one_line_usage_errors(run_cli, sample_workspace: Path, tmp_path: Path) -> None:
    missing = run_cli("chunks", str(sample_workspace / "src" / "nope.ts"))
    assert (missing.code, missing.out) == (2, "")
    assert missing.err.startswith("codecompass: no such file or folder:") and missing.err.count("\n") == 1
    outside = run_cli("chunks", str(tmp_path), "--workspace", str(sample_workspace))
    assert outside.code == 2 and "is outside the workspace" in outside.err


def test_a_stopped_service_is_named_with_its_address(run_cli, sample_workspace: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANALYSIS_ADDR", "127.0.0.1:1")
    result = run_cli("chunks", str(sample_workspace))
    assert result.code == 1
    assert result.err == "codecompass: analysis service not running at 127.0.0.1:1; run `codecompass up`\n"
    assert json.dumps(result.err).count("Traceback") == 0
