"""Every code block the documentation marks as runnable runs, so examples cannot rot.

Pages: README.md, everything under docs/, and every distribution's README.

The convention (see docs/index.md, "Conventions"):

* a fenced block whose info string is ``sh runnable`` runs with ``bash -e -o pipefail``;
  ``python runnable`` runs with the workspace's Python;
* ``exit=N`` in the info string expects exit status N instead of 0;
* a ``text output`` block right after a runnable block must equal what it printed on stdout
  (trailing white space of each line ignored).

The blocks of one page run in order, in one fresh folder holding a copy of the repository's
``fixtures/`` (so ``fixtures/packages/welcome`` is there and writes touch only the copy), with
the workspace environment's commands (``templiqx``, ``templiqx-mcp``) on PATH and no
``TEMPLIQX_*``, ``MODEL_*`` or ``LANGFUSE_*`` settings inherited. Each block is its own process:
an ``export`` does not carry over to the next block.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [REPO / "README.md", *(REPO / "docs").rglob("*.md"), REPO / "conformance" / "README.md"]
    + [p.parent / "README.md" for p in REPO.glob("packages/*/pyproject.toml")]
)
TIMEOUT = 180
_OPEN = re.compile(r"^(`{3,})(.*)$")


@dataclass
class Block:
    """One runnable block of a page."""

    line: int
    language: str
    code: str
    exit_code: int = 0
    output: str | None = None


def runnable_blocks(text: str) -> list[Block]:
    """The runnable blocks of a Markdown text, each with its expected output if any."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    previous_was_runnable = False
    while index < len(lines):
        match = _OPEN.match(lines[index])
        if not match:
            if lines[index].strip():
                previous_was_runnable = False
            index += 1
            continue
        fence, info = match.group(1), match.group(2).split()
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and not lines[index].startswith(fence):
            body.append(lines[index])
            index += 1
        index += 1
        code = "\n".join(body) + "\n"
        if "runnable" in info:
            language = info[0]
            if language not in ("sh", "python"):
                raise ValueError(f"line {start + 1}: runnable blocks are sh or python")
            exits = [int(word[5:]) for word in info if word.startswith("exit=")]
            blocks.append(Block(start + 1, language, code, exits[0] if exits else 0))
            previous_was_runnable = True
        elif info[:2] == ["text", "output"]:
            if not previous_was_runnable:
                raise ValueError(f"line {start + 1}: an output block must follow a runnable one")
            blocks[-1].output = code
            previous_was_runnable = False
        else:
            previous_was_runnable = False
    return blocks


def _environment() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPLIQX_", "MODEL_", "LANGFUSE_"))
    }
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["TEMPLIQX_MOCK_PACE_MS"] = "0"
    return env


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


PAGES_WITH_BLOCKS = [p for p in PAGES if runnable_blocks(p.read_text(encoding="utf-8"))]


@pytest.mark.parametrize(
    "page", PAGES_WITH_BLOCKS, ids=[str(p.relative_to(REPO)) for p in PAGES_WITH_BLOCKS]
)
def test_runnable_blocks_run(page: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(REPO / "fixtures", work / "fixtures")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    env = _environment()
    name = page.relative_to(REPO)
    for number, block in enumerate(runnable_blocks(page.read_text(encoding="utf-8"))):
        if block.language == "sh":
            argv = ["bash", "-e", "-o", "pipefail", "-c", block.code]
        else:
            script = scripts / f"block_{number}.py"
            script.write_text(block.code, encoding="utf-8")
            argv = [sys.executable, str(script)]
        done = subprocess.run(
            argv, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
        where = f"{name}:{block.line}"
        assert done.returncode == block.exit_code, (
            f"{where}: exit {done.returncode}, expected {block.exit_code}\n"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )
        if block.output is not None:
            assert _normalized(done.stdout) == _normalized(block.output), (
                f"{where}: the output shown under the block is not what it prints"
            )


def test_the_runnable_convention_is_in_use() -> None:
    counts = dict.fromkeys(("sh", "python"), 0)
    for page in PAGES:
        for block in runnable_blocks(page.read_text(encoding="utf-8")):
            counts[block.language] += 1
    assert counts["sh"] >= 10, counts
    assert counts["python"] >= 5, counts


def test_block_parser() -> None:
    text = (
        "intro\n\n```sh runnable exit=2\nfalse\n```\n\n```text output\nhi\n```\n\n"
        "```python\nnot run\n```\n\n````python runnable\nprint('```')\n````\n"
    )
    blocks = runnable_blocks(text)
    assert [(b.line, b.language, b.exit_code, b.output) for b in blocks] == [
        (3, "sh", 2, "hi\n"),
        (15, "python", 0, None),
    ]
    assert blocks[1].code == "print('```')\n"
