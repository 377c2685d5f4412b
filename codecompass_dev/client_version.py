"""Stamp the protos' version (protos/VERSION) on both client packages (`make proto`): the Python
distribution reads it from `codecompass.v1.__version__`, the TypeScript one from its package.json.

One number for the protos and every package built from them: its major is the proto package's
(`codecompass.v1` -> 1), its minor grows with each release that adds to the contract. Written here,
and diff-checked with the stubs by `make proto-check`, so that no package can claim another."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION_FILE = ROOT / "protos" / "VERSION"
PROTO_PACKAGE = ROOT / "protos" / "codecompass"
PYTHON_INIT = ROOT / "clients" / "python" / "src" / "codecompass" / "v1" / "__init__.py"
PACKAGE_JSON = ROOT / "clients" / "typescript" / "package.json"

PYTHON_TEMPLATE = '''"""The generated stubs of the `codecompass.v1` protos (grpcio-tools: `make proto`).

`__version__` is the protos' version (protos/VERSION), stamped by codecompass_dev.client_version:
the version of the `codecompass-client` distribution too."""

__version__ = "{version}"
'''


def proto_version() -> str:
    """protos/VERSION, checked: a semantic version whose major is the proto package's version."""
    version = VERSION_FILE.read_text(encoding="utf-8").strip()
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise SystemExit(f"{VERSION_FILE.relative_to(ROOT)}: {version!r} is not MAJOR.MINOR.PATCH")
    packages = sorted(path.name for path in PROTO_PACKAGE.iterdir() if re.fullmatch(r"v\d+", path.name))
    newest = max(int(name[1:]) for name in packages)
    if int(version.split(".")[0]) != newest:
        raise SystemExit(f"{VERSION_FILE.relative_to(ROOT)}: {version} does not start with the proto "
                         f"package's version (codecompass.v{newest}: {newest}.x.y)")
    return version


def main() -> int:
    version = proto_version()
    PYTHON_INIT.write_text(PYTHON_TEMPLATE.format(version=version), encoding="utf-8")
    package = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    package["version"] = version
    PACKAGE_JSON.write_text(json.dumps(package, indent=2) + "\n", encoding="utf-8")
    print(f"client packages stamped {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
