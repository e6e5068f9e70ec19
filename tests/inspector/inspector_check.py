"""Drive ``templiqx-mcp`` with the MCP Inspector CLI, a client we did not write (issue #16).

Run by the opt-in nox session ``mcp_inspector`` (``uv run --frozen --all-packages nox -s
mcp_inspector``); it needs Node.js and fetches the Inspector from the npm registry through
``npx`` the first time. Not part of the default test run: it depends on Node and, once, on the
network, and takes a minute.

Each check runs one Inspector command against a fresh server over a copy of the example
package and compares what the Inspector shows with the catalog, the CLI and the issue's bounds:

* ``tools/list`` with ``--strict``: every tool, its title and its four annotations as the
  catalog states them, and no schema-portability error or warning;
* ``tools/call validate_package``: the envelope equals ``templiqx --json validate``;
* the ``run-eval`` prompt followed as written: ``list_evals``, then ``run_eval`` with the
  returned capabilities, passes;
* ``tools/call put_contract`` with a 100 KB source that is one string (as large as one command
  line argument may be): an answer under 4 KB;
* ``resources/list`` and ``resources/templates/list`` (issue #28: the Inspector exited 1 on the
  templates), and ``resources/read`` of a package and a contract through the templates;
* ``prompts/get`` without the prompt's required argument: an error naming it (issue #28);
* ``tools/list`` with an unknown option and without a root: exit 2 and 1, nothing created.

Exit status 0 when every check passes; each check prints one line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from templiqx_application import CATALOG

REPO = Path(__file__).resolve().parents[2]
WELCOME = REPO / "fixtures" / "packages" / "welcome"
INSPECTOR = os.environ.get("TEMPLIQX_INSPECTOR", "@modelcontextprotocol/inspector@2.12.0")
TIMEOUT = 300
CONNECT_TIMEOUT_MS = 120_000
"""How long the Inspector waits for the server's ``initialize`` answer. Its default, 15 s, is
a load artefact away from failing: on the shared two-core machine at load ~6 three checks
failed 'unreachable' while the server was still importing, and passed on the next run."""
SMALL_ANSWER = 4096


def inspector(root: Path, *args: str, strict: bool = False) -> subprocess.CompletedProcess[str]:
    server = [sys.executable, "-m", "templiqx_mcp", "--root", str(root)]
    command = [
        "npx",
        "--yes",
        INSPECTOR,
        "--cli",
        "--connect-timeout",
        str(CONNECT_TIMEOUT_MS),
        *(["--strict"] if strict else []),
        *server,
    ]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def answer(done: subprocess.CompletedProcess[str]) -> Any:
    if done.returncode != 0:
        raise AssertionError(f"inspector exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def call_tool(root: Path, name: str, *arguments: str) -> Any:
    """The Inspector's answer to ``tools/call`` of ``name`` with ``key=value`` arguments."""
    return answer(
        inspector(root, "--method", "tools/call", "--tool-name", name, "--tool-arg", *arguments)
    )


def check_tools(root: Path, scratch: Path) -> str:
    done = inspector(root, "--method", "tools/list", strict=True)
    tools = {tool["name"]: tool for tool in answer(done)["tools"]}
    assert sorted(tools) == sorted(spec.name for spec in CATALOG), sorted(tools)
    for spec in CATALOG:
        tool = tools[spec.name]
        hints = tool["annotations"]
        assert tool["title"] == spec.title == hints["title"], spec.name
        assert hints["readOnlyHint"] is spec.read_only, spec.name
        assert hints["destructiveHint"] is spec.destructive, spec.name
        assert hints["idempotentHint"] is spec.idempotent, spec.name
        assert hints["openWorldHint"] is False, spec.name  # the fake runtime reaches nothing
        assert tool["outputSchema"]["properties"]["result"], spec.name
    assert "Warning" not in done.stderr, done.stderr
    assert "error" not in done.stderr.lower(), done.stderr
    return f"{len(tools)} tools, annotations as the catalog says, strict schema check clean"


def check_validate_equals_the_cli(root: Path, scratch: Path) -> str:
    envelope = call_tool(root, "validate_package", "package=welcome")["structuredContent"]
    cli = subprocess.run(
        [
            shutil.which("templiqx") or "templiqx",
            "--root",
            str(root),
            "--json",
            "validate",
            "welcome",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert cli.returncode == 0, cli.stderr
    assert envelope == json.loads(cli.stdout)
    return "validate_package equals `templiqx --json validate`"


def check_the_run_eval_prompt(root: Path, scratch: Path) -> str:
    prompt = answer(
        inspector(
            root,
            "--method",
            "prompts/get",
            "--prompt-name",
            "run-eval",
            "--prompt-args",
            "package=welcome",
        )
    )
    text = prompt["messages"][0]["content"]["text"]
    assert "required_capabilities" in text, text
    listed = call_tool(root, "list_evals", "package=welcome")["structuredContent"]["result"]
    results = []
    for case in listed:
        ran = call_tool(
            root,
            "run_eval",
            "package=welcome",
            f"contract={case['contract_id']}",
            f"fixture_id={case['fixture_id']}",
            f"capabilities={json.dumps(case['required_capabilities'])}",
        )["structuredContent"]
        results.append(ran["result"]["passed"])
    assert results, listed
    assert all(results), listed
    return f"the run-eval prompt, followed as written: {len(results)} evals pass"


def check_a_large_bad_source_gets_a_small_answer(root: Path, scratch: Path) -> str:
    result = call_tool(
        root, "put_contract", "package=welcome", "contract=big", "source=" + "x" * 100_000
    )
    size = len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
    assert result["structuredContent"]["ok"] is False
    assert size < SMALL_ANSWER, size
    return f"a 100 KB one-string source is answered in {size} bytes"


def check_resources_and_templates(root: Path, scratch: Path) -> str:
    listed = answer(inspector(root, "--method", "resources/list"))["resources"]
    assert {r["uri"] for r in listed} == {
        "templiqx://catalog",
        "templiqx://packages",
        "templiqx://workspace",
    }, listed
    templates = answer(inspector(root, "--method", "resources/templates/list"))
    uris = [t["uriTemplate"] for t in templates["resourceTemplates"]]
    assert uris == [
        "templiqx://packages/{package}",
        "templiqx://packages/{package}/contracts/{contract}",
    ], uris
    package = answer(
        inspector(root, "--method", "resources/read", "--uri", "templiqx://packages/welcome")
    )
    envelope = json.loads(package["contents"][0]["text"])
    assert (envelope["operation"], envelope["ok"]) == ("validate_package", True), envelope
    contract_uri = "templiqx://packages/welcome/contracts/account-digest"
    contract = answer(inspector(root, "--method", "resources/read", "--uri", contract_uri))
    loaded = json.loads(contract["contents"][0]["text"])
    assert loaded["result"]["id"] == "account-digest", loaded
    return f"{len(listed)} resources and {len(uris)} templates listed; both templates read"


def check_a_prompt_without_its_argument(root: Path, scratch: Path) -> str:
    done = inspector(root, "--method", "prompts/get", "--prompt-name", "bootstrap")
    assert done.returncode != 0, done.stdout
    said = done.stdout + done.stderr
    assert "requires the argument 'package'" in said, said[-2000:]
    return "prompts/get without `package` is refused, naming it"


def check_the_command_line(root: Path, scratch: Path) -> str:
    unknown = subprocess.run(
        [sys.executable, "-m", "templiqx_mcp", "--root", str(root), "--bogus"],
        capture_output=True,
        text=True,
        cwd=scratch,
        timeout=60,
        check=False,
    )
    missing = subprocess.run(
        [sys.executable, "-m", "templiqx_mcp", "--root", "nowhere"],
        capture_output=True,
        text=True,
        cwd=scratch,
        timeout=60,
        check=False,
    )
    assert unknown.returncode == 2, unknown
    assert missing.returncode == 1, missing
    assert list(scratch.iterdir()) == []
    return "--bogus exits 2, a missing root exits 1, nothing created"


def main() -> int:
    if shutil.which("npx") is None:
        print("inspector: npx (Node.js) is not installed", file=sys.stderr)
        return 1
    failed = 0
    with tempfile.TemporaryDirectory(prefix="templiqx-inspector-") as base:
        checks = [
            check_tools,
            check_validate_equals_the_cli,
            check_the_run_eval_prompt,
            check_a_large_bad_source_gets_a_small_answer,
            check_resources_and_templates,
            check_a_prompt_without_its_argument,
            check_the_command_line,
        ]
        for index, check in enumerate(checks):
            root = Path(base) / f"root{index}"
            shutil.copytree(WELCOME, root / "welcome")
            scratch = Path(base) / f"scratch{index}"
            scratch.mkdir()
            try:
                print(f"ok    {check.__name__}: {check(root, scratch)}")
            except Exception as exc:
                failed += 1
                print(f"FAIL  {check.__name__}: {type(exc).__name__}: {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
