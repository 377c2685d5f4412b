"""Every command docs/runbooks.md names exists: each `codecompass COMMAND` and `python -m
codecompass.retrieval.admin COMMAND` in its code blocks answers `--help`, and each script it runs is
in the repository and executable. (What the commands do is tested where the runbook says.)"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RUNBOOK = REPO / "docs" / "runbooks.md"
PYTHONPATH = os.pathsep.join([str(REPO / "clients" / "python" / "src"), str(REPO / "py_services"),
                              str(REPO / "gateway_mcp"), str(REPO)])


def _commands() -> list[list[str]]:
    blocks = re.findall(r"```sh\n(.*?)```", RUNBOOK.read_text(encoding="utf-8"), flags=re.S)
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [shlex.split(line) for line in lines if line]


def _help(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv, "--help"], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": PYTHONPATH})


def test_every_command_the_runbook_names_exists() -> None:
    commands = _commands()
    cli = sorted({words[1] for words in commands if words[0] == "codecompass"})
    admin = sorted({words[words.index("codecompass.retrieval.admin") + 1] for words in commands
                    if "codecompass.retrieval.admin" in words})
    scripts = sorted({word for words in commands for word in words if word.startswith("deploy/runbooks/")})
    assert {"backup", "restore", "doctor", "index"} <= set(cli)
    assert set(admin) == {"backup", "restore", "doctor"}
    assert scripts == ["deploy/runbooks/rotate-gateway-token.sh"]
    for name in cli:
        run = _help("-m", "codecompass_cli", name)
        assert run.returncode == 0 and "usage:" in run.stdout, (name, run.stderr)
    for name in admin:
        run = _help("-m", "codecompass.retrieval.admin", name)
        assert run.returncode == 0 and "usage:" in run.stdout, (name, run.stderr)
    for script in scripts:
        assert os.access(REPO / script, os.X_OK), script
