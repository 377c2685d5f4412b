"""docs/api.md (issue 31 §2): every service, RPC, message, field, enum and value of the protos,
each with its doc comment, and the committed page is what the protos generate."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from codecompass_dev.api_reference import PACKAGE, reference

ROOT = Path(__file__).resolve().parents[3]
BUF = ROOT / "node_ts_service" / "node_modules" / ".bin" / "buf"


@pytest.fixture(scope="module")
def descriptor_set(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if not BUF.is_file():
        pytest.fail(f"{BUF} is missing: run `make setup`", pytrace=False)
    out = tmp_path_factory.mktemp("api") / "set.binpb"
    subprocess.run([str(BUF), "build", "--as-file-descriptor-set", "-o", str(out)], cwd=ROOT, check=True)
    return out.read_bytes()


def test_the_committed_reference_is_what_the_protos_generate(descriptor_set: bytes) -> None:
    assert (ROOT / "docs" / "api.md").read_text(encoding="utf-8") == reference(descriptor_set), \
        "docs/api.md is out of date: run `make proto`"


def test_every_element_is_listed_with_its_comment(descriptor_set: bytes) -> None:
    page = reference(descriptor_set)
    files = [f for f in descriptor_pb2.FileDescriptorSet.FromString(descriptor_set).file if f.package == PACKAGE]
    names: list[str] = []
    for file in files:
        for service in file.service:
            names += [f"### {service.name}", *(f"| `{m.name}` |" for m in service.method)]
        stack = [(m.name, m) for m in file.message_type]
        while stack:
            name, message = stack.pop()
            if message.options.map_entry:
                continue
            names += [f"### {name}", *(f"| `{f.name}` | {f.number} |" for f in message.field)]
            names += [f"| `{v.name}` | {v.number} |" for e in message.enum_type for v in e.value]
            stack += [(f"{name}.{n.name}", n) for n in message.nested_type]
        names += [f"| `{v.name}` | {v.number} |" for e in file.enum_type for v in e.value]
    missing = [n for n in names if n not in page]
    assert not missing, missing[:10]
    assert "_(no comment)_" not in page
    # A table row whose last cell (the comment) is empty: an element without a doc comment.
    assert not [line for line in page.splitlines() if line.startswith("| `") and line.rstrip().endswith("|  |")]
