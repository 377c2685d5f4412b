"""`python -m codecompass.retrieval.admin backup|restore|doctor`: the operator's commands on the
indexes themselves, run where LanceDB is (the writer's image, or this checkout), with the same
settings as the writer. `codecompass backup|restore|doctor` run this module (the CLI itself never
loads LanceDB). Every failure is one line on stderr and exit 1 (2: the settings)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from codecompass.common import names
from codecompass.common.config import ConfigError, Settings, load_settings
from codecompass.common.logging import configure_logging
from codecompass.retrieval import backup as backups
from codecompass.retrieval import doctor
from codecompass.retrieval.schema import INDEX_FORMAT_VERSION

PROG = "codecompass"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name if __spec__ else 'codecompass.retrieval.admin'}",
                                     description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_backup_arguments(sub.add_parser("backup", help=BACKUP_HELP))
    add_restore_arguments(sub.add_parser("restore", help=RESTORE_HELP))
    sub.add_parser("doctor", help=DOCTOR_HELP)
    return parser


BACKUP_HELP = "copy the indexes (committed versions, consistent across each index's tables) to a folder or s3:// prefix"
RESTORE_HELP = "copy a backup into the index root, which must hold none of its indexes"
DOCTOR_HELP = "say in one line each why an index writer would not start, and what it would do to each index's format"


def add_backup_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dest", metavar="DEST", help="an empty folder or s3://bucket/prefix")
    parser.add_argument("--key", action="append", metavar="KEY",
                        help="only this index (its key, as `codecompass status` lists it); repeat for more")


def add_restore_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("src", metavar="SRC", help="a folder or s3://bucket/prefix that `backup` wrote")


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "backup":
        copied = backups.backup(settings, args.dest, args.key)
        for index in copied:
            print(f"backed up {index.workspace_id or index.key} ({index.key}): "
                  + ", ".join(f"{name}@{version}" for name, version in sorted(index.versions.items())))
        print(f"{len(copied)} indexes backed up to {args.dest.rstrip('/')}")
        return 0
    if args.command == "restore":
        written = backups.backup_format(args.src, settings)
        restored = backups.restore(settings, args.src)
        for index in restored:
            print(f"restored {index.workspace_id or index.key} ({index.key})")
        print(f"{len(restored)} indexes restored from {args.src.rstrip('/')}; restart the searchers that read them "
              "(their local copies of these indexes are stale)")
        if written and written != INDEX_FORMAT_VERSION:
            print(f"note: the backup is in index format {written}; this release writes {INDEX_FORMAT_VERSION}: "
                  "its writer rebuilds these indexes at its next sync")
        return 0
    findings = doctor.diagnose(settings)
    for finding in findings:
        print(f"{finding.verdict:<4} {finding.line}")
    return 1 if any(f.verdict == doctor.FAIL for f in findings) else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        configure_logging(names.CLI, "WARNING")
        settings = load_settings()
    except ConfigError as exc:
        print(f"{PROG}: configuration error: {exc}", file=sys.stderr)
        return 2
    try:
        return run(args, settings)
    except backups.BackupError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
    except OSError as exc:
        # A store that refuses or cannot be reached, a folder that cannot be written: its first line.
        reason = (exc.strerror or str(exc)).strip().splitlines()
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"{PROG}: {args.command} failed: {where}{reason[0] if reason else type(exc).__name__}", file=sys.stderr)
    except (ValueError, RuntimeError) as exc:
        # LanceDB's errors (a table it cannot open or write) arrive as these, with a long text.
        lines = str(exc).strip().splitlines()
        print(f"{PROG}: {args.command} failed: {lines[0][:300] if lines else type(exc).__name__}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
