"""Hypothesis strategies for R1: generated and mutated documents and arguments.

Three families, combined by the R1 tests:

* **values** — JSON-like trees whose leaves favour edge cases: wrong types, integers beyond
  64 bits, NaN and infinities, unicode edge cases (lone surrogates, BOM, line separators,
  right-to-left overrides, non-characters, combining marks), YAML-significant words, huge
  strings, deep nesting, and (for the Python API) values that are not JSON at all;
* **YAML text** — random text over a YAML-heavy alphabet, and sequences of YAML tokens;
* **mutations** — text edits (delete, insert, replace, duplicate, swap lines, truncate) and tree
  edits (replace a subtree, drop or add a key, wrap, nest deeply, retype) applied to seed
  documents (the example package, and the reference corpus when it is available).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st
from reliability_kit import REPO, WELCOME

__all__ = [
    "SEEDS",
    "json_values",
    "mutated_text",
    "mutated_tree",
    "python_values",
    "yaml_documents",
]

EDGE_TEXT = [
    "",
    " ",
    "\x00",
    "\x07",
    "\x1b[31m",
    "\x7f",
    "\x85",
    "\ud800",
    "\udfff",
    "\ud83d",
    "\ufeff",
    "\ufffe",
    "\uffff",
    "\u2028",
    "\u2029",
    "\u202e",
    "\u200b",
    "\U0010ffff",
    "e\u0301",
    "\u00e9",
    "\U0001f642",
    "\r\n",
    "\r",
    "\t",
    "null",
    "~",
    "yes",
    "No",
    "on",
    "0x1F",
    "0o17",
    "1e400",
    "-0",
    ".inf",
    "-.inf",
    ".nan",
    "2026-07-12",
    "2026-02-30T25:61:61Z",
    "007",
    "18446744073709551616",
    "-9223372036854775809",
    "'",
    '"',
    "\\",
    "{{ inputs.x }}",
    "${HOME}",
    "&a",
    "*a",
    "!!binary",
    "!!python/object:os.system",
    "%YAML 1.1",
    "---",
    "...",
    "<<",
    "? ",
    ": ",
    "- ",
    "#",
    "|",
    ">",
    "@",
    "`",
    "../../etc/passwd",
    "/etc/passwd",
    "C:\\Windows",
    "tool_contract:lookup",
    "inputs.customer.name",
    "structured_output",
    "templiqx/v1alpha1",
]

YAML_ALPHABET = "abkx019:-_[]{}&*!|>'\"#\n \t?,.~%@`\\eE+\u00e9\u2028\x00\x07\ufeff"

YAML_TOKENS = [
    "kind: text\n",
    "kind: interpolate\n",
    "kind: include\n",
    "value: ",
    "- ",
    "&a ",
    "*a",
    "!!str ",
    "!!int ",
    "!!map ",
    "!custom ",
    "<<: *a\n",
    "---\n",
    "...\n",
    "{",
    "}",
    "[",
    "]",
    "  ",
    "\n",
    "\t",
    "0x10",
    "1e400",
    ".nan",
    "18446744073709551616",
    "'q'",
    '"\\ud800"',
    "api_version: templiqx/v1alpha1\n",
    "id: fuzz\n",
    "version: 1.0.0\n",
    "inputs:\n",
    "messages:\n",
    "  - role: user\n",
    "    content:\n",
    "output_schema: {type: string}\n",
    "? ",
    ": ",
    "~",
    "|\n",
    ">-\n",
    "#comment\n",
    "%TAG ! tag:x,2000:\n",
]


def one_of_weighted(*pairs: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Choose a strategy with the given integer weights (each repeated ``weight`` times in a
    ``one_of``, which picks its branches uniformly — cheaper than a ``flatmap``)."""
    return st.one_of([strategy for weight, strategy in pairs for _ in range(weight)])


def _huge(char: str, size: int) -> str:
    return char * size


huge_text = st.builds(
    _huge,
    st.sampled_from(["x", "\u00e9", "\U0001f642", "\n", " ", "{"]),
    st.sampled_from([1_000, 65_536, 1_000_000]),
)
plain_text = st.one_of(st.sampled_from(EDGE_TEXT), st.text(max_size=30))
texts = st.one_of([huge_text] + [plain_text] * 29)
keys = st.one_of(
    st.sampled_from(
        [
            "id",
            "kind",
            "role",
            "content",
            "value",
            "path",
            "schema",
            "type",
            "required",
            "properties",
            "inputs",
            "context",
            "messages",
            "output_schema",
            "capabilities",
            "extensions",
            "evals",
            "components",
            "expression",
            "filters",
            "$ref",
            "<<",
        ]
    ),
    plain_text,
)
numbers = st.one_of(
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.sampled_from([0, -1, (1 << 63) - 1, -(1 << 63), (1 << 64) - 1, 1 << 64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e16, 1e-7, 5e-324, 1.7976931348623157e308]),
)
json_scalars = st.one_of(st.none(), st.booleans(), numbers, texts)


class DeepList(list[Any]):
    """A deeply nested list whose repr stays short (hypothesis prints failing inputs)."""

    def __repr__(self) -> str:
        return f"<{_depth(self)}-deep nested list>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


class DeepDict(dict[str, Any]):
    """A deeply nested mapping whose repr stays short."""

    def __repr__(self) -> str:
        return f"<{_depth(self)}-deep nested mapping>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, (list, dict)) and value:
        value = value[0] if isinstance(value, list) else next(iter(value.values()))
        depth += 1
    return depth


def _nest(depth: int, leaf: Any, as_list: bool) -> Any:
    value = leaf
    for _ in range(depth - 1):
        value = [value] if as_list else {"a": value}
    return DeepList([value]) if as_list else DeepDict(a=value)


deep_values = st.builds(
    _nest, st.integers(min_value=100, max_value=3_000), json_scalars, st.booleans()
)


def _trees(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)
        ),
        max_leaves=8,
    )


json_values = st.one_of([deep_values] + [_trees(json_scalars)] * 19)
"""JSON-shaped values with edge-case leaves (NaN and out-of-range integers included)."""


class _Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


non_json = st.sampled_from(
    [
        b"bytes",
        bytearray(b"x"),
        {1, 2},
        frozenset(),
        (1, "tuple"),
        complex(1, 2),
        _Opaque(),
        object,
        Path("/etc/passwd"),
        {1: "int key"},
        {(1, 2): "tuple key"},
        {None: "none key"},
        range(3),
        math.pi,
    ]
)
python_values = st.one_of(json_values, non_json, _trees(st.one_of(json_scalars, non_json)))
"""Anything a Python caller might pass, JSON or not."""


# --- YAML text --------------------------------------------------------------------------------

yaml_text = st.one_of(
    st.text(alphabet=YAML_ALPHABET, max_size=300),
    st.lists(st.sampled_from(YAML_TOKENS), max_size=40).map("".join),
    st.text(max_size=200),
)


_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(value: Any, style: int) -> str:
    """``value`` as JSON (styles 0 and 1, JSON being YAML) or as flow/block YAML (2, 3)."""
    try:
        if style <= 1:
            return json.dumps(value, ensure_ascii=style == 1, allow_nan=True, default=repr)
        return yaml.dump(
            value,
            Dumper=_DUMPER,
            default_flow_style=style == 2,
            allow_unicode=True,
            sort_keys=False,
        )
    except RecursionError:  # too deep for the writers: write the nesting directly
        return "[" * 3_000 + "0" + "]" * 3_000
    except (yaml.YAMLError, ValueError, TypeError, UnicodeError):
        return repr(value)


def dumped(values: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    """``values`` written as JSON or as block/flow YAML."""
    return st.builds(_dump, values, st.integers(0, 3))


yaml_documents = st.one_of(yaml_text, dumped(json_values))
"""Random YAML-ish text and random trees written as YAML or JSON."""


# --- seeds ------------------------------------------------------------------------------------


def _reference() -> Path | None:
    configured = os.environ.get("TEMPLIQX_REFERENCE")
    candidate = Path(configured) if configured else REPO.parent / "shared" / "reference"
    return candidate if candidate.is_dir() else None


def _files(*patterns: str) -> list[Path]:
    found: list[Path] = []
    reference = _reference()
    for pattern in patterns:
        found += sorted(WELCOME.glob(pattern))
        if reference is not None:
            found += sorted(reference.glob(pattern))
    return found


SEEDS: dict[str, list[str]] = {
    "contract": [
        p.read_text(encoding="utf-8")
        for p in _files("contracts/*.yaml", "crm3/contracts/*.yaml", "packages/*/contracts/*.yaml")
    ],
    "manifest": [
        p.read_text(encoding="utf-8")
        for p in _files("templiqx.yaml", "crm3/templiqx.yaml", "packages/*/templiqx.yaml")
    ],
    "partial": [p.read_text(encoding="utf-8") for p in _files("partials/*.yaml")],
    "translation": [p.read_text(encoding="utf-8") for p in _files("translations/*.yaml")],
    "scenario": [
        p.read_text(encoding="utf-8")
        for p in _files("scenarios/*/manifest.json", "crm3/scenarios/*/manifest.json")
    ],
}
"""Seed documents by kind: the example package's, plus the reference corpus when present."""


# --- text mutations ---------------------------------------------------------------------------

text_edit = st.tuples(
    st.sampled_from(["delete", "insert", "replace", "duplicate", "swap", "truncate", "indent"]),
    st.integers(min_value=0, max_value=1 << 16),
    st.integers(min_value=0, max_value=60),
    st.one_of(yaml_text, st.sampled_from(YAML_TOKENS), st.sampled_from(EDGE_TEXT)),
)


def apply_text_edits(source: str, edits: list[tuple[str, int, int, str]]) -> str:
    """``source`` with each edit applied in turn (positions wrap around the current text)."""
    for action, start, length, piece in edits:
        start %= len(source) + 1
        end = min(start + length, len(source))
        if action == "delete":
            source = source[:start] + source[end:]
        elif action == "insert":
            source = source[:start] + piece + source[start:]
        elif action == "replace":
            source = source[:start] + piece + source[end:]
        elif action == "duplicate":
            source = source[:end] + source[start:end] + source[end:]
        elif action == "truncate":
            source = source[:start]
        else:
            lines = source.split("\n")
            i, j = start % len(lines), (start + length) % len(lines)
            if action == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines[i] = " " * (length % 7) + lines[i].lstrip(" ")
            source = "\n".join(lines)
    return source


def mutated_text(seeds: list[str]) -> st.SearchStrategy[str]:
    """A seed with one to four text edits."""
    return st.builds(
        apply_text_edits, st.sampled_from(seeds), st.lists(text_edit, min_size=1, max_size=4)
    )


# --- tree mutations ---------------------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = _get(value, path[:-1])
    parent[path[-1]] = new
    return value


TreeEdit = tuple[str, int, Any]
tree_edit = st.tuples(
    st.sampled_from(["replace", "drop", "add", "wrap", "nest", "stringify", "listify", "null"]),
    st.integers(min_value=0, max_value=1 << 16),
    _trees(json_scalars),
)


def apply_tree_edits(value: Any, edits: list[TreeEdit]) -> Any:
    """``value`` (a parsed document) with each edit applied at a chosen node."""
    for action, where, new in edits:
        paths = _paths(value)
        path = paths[where % len(paths)]
        node = _get(value, path)
        if action == "replace":
            value = _set(value, path, new)
        elif action == "drop" and path:
            parent = _get(value, path[:-1])
            del parent[path[-1]]
        elif action == "add":
            target = node if isinstance(node, dict) else None
            if target is not None:
                target[f"unknown_{where % 97}"] = new
        elif action == "wrap":
            value = _set(value, path, [node])
        elif action == "nest":
            value = _set(value, path, _nest(40 + where % 100, node, where % 2 == 0))
        elif action == "stringify":
            value = _set(value, path, json.dumps(node, default=repr, allow_nan=True))
        elif action == "listify":
            value = _set(value, path, {"0": node} if isinstance(node, list) else [node])
        else:
            value = _set(value, path, None)
    return value


def _load(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


Prepare = Callable[[Any], Any]


def _parsed(seeds: list[str], prepare: Prepare | None) -> list[str]:
    """Each seed parsed and (optionally) prepared, kept as JSON text to copy cheaply."""
    out = []
    for seed in seeds:
        value = json.loads(json.dumps(_load(seed), default=str))
        out.append(json.dumps(prepare(value) if prepare is not None else value))
    return out


def mutated_tree(seeds: list[str], prepare: Prepare | None = None) -> st.SearchStrategy[str]:
    """A seed parsed, edited as a tree (one to three edits) and written back as YAML/JSON."""
    parsed = _parsed(seeds, prepare)

    def build(index: int, edits: list[TreeEdit], style: int) -> str:
        value = json.loads(parsed[index % len(parsed)])
        return _dump(apply_tree_edits(value, edits), style)

    return st.builds(
        build,
        st.integers(min_value=0, max_value=1 << 10),
        st.lists(tree_edit, min_size=1, max_size=3),
        st.integers(0, 3),
    )


def _leaf_paths(value: Any) -> list[tuple[Any, ...]]:
    return [p for p in _paths(value) if p and not isinstance(_get(value, p), (dict, list))]


def _gentle(value: Any, edits: list[tuple[int, str]]) -> Any:
    """Replace string leaves (not structural words) with edge-case text, keeping the shape."""
    structural = {"api_version", "id", "kind", "role", "type", "version", "path", "name", "format"}
    for where, text in edits:
        leaves = [
            p
            for p in _leaf_paths(value)
            if isinstance(_get(value, p), str)
            and not (isinstance(p[-1], str) and p[-1] in structural)
        ]
        if leaves:
            path = leaves[where % len(leaves)]
            value = _set(value, path, text)
    return value


gentle_text = one_of_weighted(
    (4, st.sampled_from(EDGE_TEXT)),
    (4, st.text(max_size=20)),
    (1, st.builds(_huge, st.sampled_from(["y", "\u00e9"]), st.just(70_000))),
)


def mutated_leaves(seeds: list[str], prepare: Prepare | None = None) -> st.SearchStrategy[str]:
    """A seed whose text leaves are replaced by edge-case strings: usually still valid, so the
    mutation reaches validation, compilation and rendering rather than the parser."""
    parsed = _parsed(seeds, prepare)

    def build(index: int, edits: list[tuple[int, str]], style: int) -> str:
        return _dump(_gentle(json.loads(parsed[index % len(parsed)]), edits), style)

    return st.builds(
        build,
        st.integers(min_value=0, max_value=1 << 10),
        st.lists(st.tuples(st.integers(0, 1 << 16), gentle_text), min_size=1, max_size=3),
        st.integers(0, 3),
    )


def documents(kind: str, prepare: Prepare | None = None) -> st.SearchStrategy[str]:
    """Generated and mutated documents of one kind (see :data:`SEEDS`).

    ``prepare`` adjusts each parsed seed before tree mutations (e.g. sets a contract's id).
    """
    seeds = SEEDS[kind]
    return one_of_weighted(
        (2, yaml_documents),
        (2, mutated_text(seeds)),
        (3, mutated_tree(seeds, prepare)),
        (3, mutated_leaves(seeds, prepare)),
    )
