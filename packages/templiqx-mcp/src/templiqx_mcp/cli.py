"""The ``templiqx-mcp`` command line: parse, compose, serve — importing only what each step needs.

Parsing needs nothing but ``argparse``: ``--help``, ``--version`` and every usage error (exit 2)
answer before the SDK or the service is imported. The SDK is imported lean
(:func:`templiqx_mcp.sdk.import_lean`), then the service is composed over the packages root —
which must exist: a missing root is exit 1 (``TQX_PATH_INVALID``), never created — and the
server runs until the client closes stdin (exit 0) or stops reading (exit 0, quietly), or until
SIGINT / Ctrl-C (exit 130).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from templiqx_mcp.setting import ServerSetting

__all__ = [
    "DEFAULT_RUNTIME",
    "PACKAGES_ROOT_ENV",
    "RUNTIME_ENV",
    "WORKSPACE_ROOT_ENV",
    "main",
    "parser",
    "setting_from",
]

PROG = "templiqx-mcp"
VERSION = "0.2.0"
PACKAGES_ROOT_ENV = "TEMPLIQX_PACKAGES_ROOT"
WORKSPACE_ROOT_ENV = "TEMPLIQX_WORKSPACE_ROOT"
RUNTIME_ENV = "TEMPLIQX_RUNTIME"
DEFAULT_RUNTIME = "fake"
DEFAULT_WORKSPACE_DIR = ".templiqx-workspace"  # templiqx_local.DEFAULT_WORKSPACE_DIR, unimported
INTERRUPTED = 130

DESCRIPTION = """\
Serve every templiqx operation as an MCP tool over stdio: an MCP client starts this command
and talks JSON-RPC to it on stdin/stdout (one message per line). It is not meant to be run by
hand; stdout carries only the protocol."""

EPILOG = f"""\
environment:
  {PACKAGES_ROOT_ENV}        the packages root when neither --root nor ROOT is given
  {WORKSPACE_ROOT_ENV}       the workspace when neither --workspace nor WORKSPACE is given
  {RUNTIME_ENV}              runtime for execute_contract when --runtime is not given: fake
                                (the default, deterministic and offline), mock, openai,
                                langfuse, or any installed adapter (entry points
                                templiqx.runtimes)
  MODEL_BASE_URL, MODEL_API_KEY, MODEL_ID, MODEL_TIMEOUT_MS
                                settings of the openai and langfuse runtimes
  LANGFUSE_HOST, LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY
                                also needed by the langfuse runtime
  TEMPLIQX_MOCK_SCENARIO        scenario manifest replayed by the mock runtime
  TEMPLIQX_PACKAGE_SIGNING_KEY  key for sign_package and signature checks

Nothing is created at start-up: the packages root must exist, and the workspace folder is
created by the first artifact written there. Reads never write.

example client configuration (an "mcpServers" entry, e.g. in .mcp.json or
claude_desktop_config.json; use absolute paths):
  {{
    "mcpServers": {{
      "templiqx": {{
        "command": "/path/to/venv/bin/{PROG}",
        "args": ["--root", "/path/to/packages"],
        "env": {{"{RUNTIME_ENV}": "fake"}}
      }}
    }}
  }}

exit status: 0 when the client closes stdin or stops reading; 1 when the service cannot be
composed (a packages root that does not exist or is not a folder, an unknown runtime, missing
runtime settings); 2 for a usage error; 130 after SIGINT (Ctrl-C).
"""


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("must be more than 0 and at most 3600 seconds")
    return value


def parser() -> argparse.ArgumentParser:
    """The argument parser (usage errors exit 2 with a message on stderr)."""
    cli = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    cli.add_argument("-V", "--version", action="version", version=f"{PROG} {VERSION}")
    cli.add_argument(
        "--root",
        metavar="DIR",
        help=f"folder holding the package folders (required: this, ROOT or ${PACKAGES_ROOT_ENV})",
    )
    cli.add_argument(
        "--workspace",
        metavar="DIR",
        help=f"folder for workspace artifacts (default: ${WORKSPACE_ROOT_ENV}, else "
        f"ROOT/{DEFAULT_WORKSPACE_DIR})",
    )
    cli.add_argument(
        "--runtime",
        metavar="NAME",
        help=f"runtime for execute_contract (default: ${RUNTIME_ENV}, else {DEFAULT_RUNTIME})",
    )
    cli.add_argument(
        "--lock-timeout",
        metavar="SECONDS",
        type=_seconds,
        default=10.0,
        help="how long a write waits for another writer of the same package before it ends "
        "in TQX_BUSY (default: 10)",
    )
    cli.add_argument("root_argument", nargs="?", metavar="ROOT", help="same as --root")
    cli.add_argument(
        "workspace_argument", nargs="?", metavar="WORKSPACE", help="same as --workspace"
    )
    return cli


def setting_from(args: argparse.Namespace, environ: Mapping[str, str]) -> ServerSetting:
    """Roots and runtime name from parsed arguments and the environment (``ValueError`` names
    a usage problem)."""
    from templiqx_mcp.setting import ServerSetting

    if args.root and args.root_argument:
        raise ValueError("give the packages root once: --root DIR or ROOT, not both")
    if args.workspace and args.workspace_argument:
        raise ValueError("give the workspace once: --workspace DIR or WORKSPACE, not both")
    root = args.root or args.root_argument or environ.get(PACKAGES_ROOT_ENV)
    if not root:
        raise ValueError(
            f"no packages root: pass --root DIR (or set {PACKAGES_ROOT_ENV}); "
            "templiqx-mcp does not serve the folder it happens to be started in"
        )
    workspace = args.workspace or args.workspace_argument or environ.get(WORKSPACE_ROOT_ENV)
    packages_root = os.path.abspath(root)
    return ServerSetting(
        packages_root=packages_root,
        workspace_root=os.path.abspath(workspace)
        if workspace
        else os.path.join(packages_root, DEFAULT_WORKSPACE_DIR),
        workspace_is_default=not workspace,
        runtime=args.runtime or environ.get(RUNTIME_ENV) or DEFAULT_RUNTIME,
    )


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROG}: compose local Templiqx service: {message}\n")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the stdio server; the exit status."""
    cli = parser()
    args = cli.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        setting = setting_from(args, os.environ)
    except ValueError as exc:
        cli.error(str(exc))
    try:
        return _serve(setting, args.lock_timeout)
    except KeyboardInterrupt:  # Ctrl-C before the server took over SIGINT
        return INTERRUPTED


def _serve(setting: ServerSetting, lock_timeout: float) -> int:
    from templiqx_mcp.sdk import import_lean

    import_lean()
    import anyio

    from templiqx_local.compose import RuntimeSelectionError, compose, load_runtime
    from templiqx_mcp.server import build_server, serve_until_interrupted
    from templiqx_ports import PortError

    try:
        runtime = load_runtime(setting.runtime)
        service = compose(
            setting.packages_root,
            None if setting.workspace_is_default else setting.workspace_root,
            runtime,
            lock_timeout=lock_timeout,
        )
    except PortError as exc:
        help_line = f"\n  help: {exc.help}" if exc.help else ""
        return _fail(f"{exc} [{exc.code}]{help_line}")
    except (RuntimeSelectionError, OSError, ValueError) as exc:  # ValueError: a bad setting
        return _fail(str(exc))
    server = build_server(service, setting)
    _quiet_collector()
    _return_memory_promptly()
    status: int = anyio.run(serve_until_interrupted, server)
    return status


MMAP_THRESHOLD = 128 * 1024
"""Allocations from this size up get pages of their own, returned to the system when freed."""
ARENA_MAX = 2
"""Malloc arenas at most, whatever the number of worker threads."""


def _return_memory_promptly() -> None:
    """Keep a long-running server's resident set close to what it uses (glibc only).

    glibc raises its mmap threshold each time a large block is freed, after which blocks of
    megabytes (a contract source, its parse) come from heap arenas that are rarely given back,
    and each worker thread may get an arena of its own: under a stream of large refused inputs
    the resident set kept growing. A fixed threshold sends every large block back to the
    system when freed, and two arenas bound the per-thread fragmentation (reliability R9
    measures the ceiling). Elsewhere (musl, macOS) nothing is changed.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return
    mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
    mallopt(-8, ARENA_MAX)  # M_ARENA_MAX


def _quiet_collector() -> None:
    """Keep the cyclic garbage collector's full collections short.

    A full collection holds the GIL for as long as it takes to scan the heap it tracks, and
    while a worker parses a contract of megabytes every thread — the loop answering pings
    included — waits for it. The objects that exist once the server is up (the SDK, the
    catalog, the schemas) are moved out of the collector's reach (``gc.freeze``), so each
    collection scans only what calls create. The collection thresholds stay the defaults:
    raising them (tried: young collections every 100,000 allocations, full ones far rarer)
    shortened the pauses further but let the resident set grow without bound under a stream
    of large inputs (reliability R9: about 0.65 MiB a call), since garbage promoted to the
    old generations fragmented the allocator's arenas.
    """
    import gc

    gc.freeze()
