"""`codecompass`: run the local services and query them from a terminal (the parser and the
commands' dispatch; `__main__` is the entry point)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from codecompass_gateway.__main__ import add_server_arguments

from codecompass.common import names
from codecompass.common.chunks import NodeKind
from codecompass.common.config import RERANK_PROVIDERS, ConfigError, load_settings
from codecompass.common.logging import configure_logging
from codecompass.common.telemetry import flush_telemetry, init_telemetry
from codecompass.policy.relevance import QueryFocus
from codecompass_cli import commands
from codecompass_cli.errors import EXIT_FAILURE, EXIT_USAGE, CliError
from codecompass_cli.workspace import shown

# Enough for most functions and for a class's member signatures; longer symbols end in a pointer
# to the rest (file and lines).
DEFAULT_CODE_LINES = 80


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of workers, got {text!r}") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"workers must be between 1 and 64, got {value}")
    return value


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


# Upper bounds of search's numbers: far above any useful value, and checked here because the
# wire fields are 32-bit (a larger number was a traceback from the protobuf encoder).
MAX_TOKENS_LIMIT = 1_000_000  # beyond any model's context window
MAX_LIST_LIMIT = 1_000  # a ranked list nobody reads to the end


def _int_up_to(high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from 1 to {high:,}, got {text!r}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codecompass", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("up", help="start the local services in the background")
    p.add_argument("--workspace", help="workspace this runtime is for (recorded; shown by `status`)")
    p.set_defaults(handler=commands.cmd_up)

    p = sub.add_parser("down", help="stop every local service process of this state dir (indexes are kept)")
    p.add_argument("--purge", action="store_true", help="also delete every index in the state dir")
    p.set_defaults(handler=commands.cmd_down)

    p = sub.add_parser("gc", help="list the indexes with size and workspace; remove those of deleted workspaces")
    p.add_argument("--dry-run", action="store_true", help="only list; remove nothing")
    p.set_defaults(handler=commands.cmd_gc)

    p = sub.add_parser("status", help="show the local services and their health")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=commands.cmd_status)

    p = sub.add_parser("config", help="print the effective settings (secrets redacted)")
    p.add_argument("--variables", action="store_true", help="list every setting's env var and YAML key instead")
    p.set_defaults(handler=commands.cmd_config)

    p = sub.add_parser("chunks", help="chunk a file or folder with the analysis service")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="one JSON object per chunk, one per line")
    p.add_argument("--references", action="store_true", help="resolve one-hop references (slower)")
    p.add_argument("--workspace", help="workspace root (default: nearest folder with .git/package.json/tsconfig)")
    p.set_defaults(handler=commands.cmd_chunks)

    p = sub.add_parser("index", help="bring a workspace's index up to date, with progress")
    p.add_argument("path", metavar="PATH", help="workspace root")
    p.add_argument("--no-wait", action="store_true",
                   help="return once the lexical index is written; embeddings continue in the background")
    p.add_argument("--force", action="store_true",
                   help="index even the filesystem root, the home folder, a system folder, or a first index above "
                        "retrieval.large_index_files / large_index_mb")
    p.add_argument("--show-skipped", action="store_true", help="list the paths left out of the index, with reasons")
    p.add_argument("--workers", type=_workers, default=0, metavar="N",
                   help="spread the files to index over N worker processes committed at once (a cold index of a "
                        "large workspace on a machine with cores to spare; each worker type-checks the workspace); "
                        "under retrieval.shard_runner = job the writer waits for an Indexed Job's N pods instead")
    p.set_defaults(handler=commands.cmd_index)

    p = sub.add_parser("search", help="answer a query with selected code context (the agents' pipeline)")
    p.add_argument("path", metavar="PATH", help="workspace root")
    p.add_argument("query")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--kind", action="append", choices=[k.value for k in NodeKind], help="keep only this kind")
    p.add_argument("--path", dest="path_glob", action="append", metavar="GLOB",
                   help="keep only paths under this prefix or matching this glob")
    p.add_argument("--no-tests", action="store_true", help="leave out test files")
    p.add_argument("--semantic-ratio", type=_ratio, help="maximum semantic weight in [0, 1]")
    p.add_argument("--no-sync", action="store_true", help="search the index as it is, without syncing")
    stages = p.add_argument_group("stages (each can be turned off to compare)")
    stages.add_argument("--no-rerank", action="store_true", help="skip the rerank stage")
    stages.add_argument("--rerank-provider", choices=RERANK_PROVIDERS, help="rerank provider for this query")
    hubs = stages.add_mutually_exclusive_group()
    hubs.add_argument("--hubs", dest="hubs", action="store_const", const=True, default=None,
                      help="run the structure stage (hub elevation)")
    hubs.add_argument("--no-hubs", dest="hubs", action="store_const", const=False, help="skip the structure stage")
    stages.add_argument("--no-select", action="store_true",
                        help="print the ranked list instead of the selected context")
    p.add_argument("--max-tokens", type=_int_up_to(MAX_TOKENS_LIMIT), help="token budget of the answer (default 8000)")
    p.add_argument("--min-relevance", type=_ratio, help="relevance gate in [0, 1] (default 0.5)")
    p.add_argument("--focus", choices=[f.value for f in QueryFocus], default=QueryFocus.AUTO.value,
                   help="down-weight tests (implementation) or implementation (tests); auto judges the query")
    p.add_argument("--limit", type=_int_up_to(MAX_LIST_LIMIT), default=10,
                   help="results of the ranked list (--no-select)")
    p.add_argument("--max-lines", type=_positive_int, default=DEFAULT_CODE_LINES,
                   help=f"code lines shown per ranked result with --no-select (default {DEFAULT_CODE_LINES})")
    p.set_defaults(handler=commands.cmd_search)

    p = sub.add_parser("mcp", help="serve the MCP tools (stdio or streamable HTTP), starting the services if needed")
    add_server_arguments(p)
    p.set_defaults(handler=commands.cmd_mcp)

    # The operator's commands on the indexes themselves (docs/runbooks.md): run by the retrieval
    # package, where LanceDB is, which parses their options (`--help` included).
    for name, help_text in commands.ADMIN_COMMANDS.items():
        p = sub.add_parser(name, help=help_text, add_help=False)
        p.add_argument("admin_args", nargs=argparse.REMAINDER)
        p.set_defaults(handler=commands.cmd_admin)

    p = sub.add_parser("run", help="start services, index a workspace and answer a sample query")
    p.add_argument("--workspace", required=True)
    p.set_defaults(handler=commands.cmd_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    # Known only: an admin command's options (`--help` among them) are its module's to parse.
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command not in commands.ADMIN_COMMANDS:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command in commands.ADMIN_COMMANDS:
        args.admin_args = [*unknown, *args.admin_args]
    try:
        # The CLI's own output is for people; only problems go to the JSON log on stderr. Logging is
        # set up before the settings load, so that what loading logs (a renamed variable's warning)
        # is a JSON line too.
        if args.command == "mcp":
            # A long-running server: it is the gateway in logs and traces, whoever started it.
            service, level = names.GATEWAY, None
        else:
            service, level = names.CLI, "WARNING"
        configure_logging(service, level)
        settings = load_settings()
        # A gateway serves its metrics where the gateway module would (GATEWAY_METRICS_PORT); the
        # CLI's own short-lived commands serve none.
        port = settings.metrics_port(names.GATEWAY) if service == names.GATEWAY else None
        init_telemetry(service, metrics_port=port, metrics_host=settings.bind_host)
    except ConfigError as exc:
        print(f"codecompass: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return commands.dispatch(args, settings)
    except CliError as exc:
        print(f"codecompass: {exc}", file=sys.stderr)
        if exc.detail:
            print(exc.detail, file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("codecompass: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        # A file the command needed (state dir, log, workspace) could not be used: say which.
        where = f"{shown(str(exc.filename))}: " if exc.filename else ""
        # mkdir's "File exists" hides the actual problem.
        problem = ("a file stands where a folder is needed" if isinstance(exc, FileExistsError | NotADirectoryError)
                   else exc.strerror or str(exc))
        print(f"codecompass: {where}{problem}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        # Flush rather than shut down: main() also runs in-process (tests), and
        # the SDK's own exit hook shuts the provider down when the process ends.
        flush_telemetry()
        for handler in logging.getLogger().handlers:
            handler.flush()
