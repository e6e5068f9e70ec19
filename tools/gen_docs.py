"""Generate the parts of the documentation that the code defines, so they cannot drift.

Each generated part sits in a Markdown page between two markers::

    <!-- BEGIN GENERATED: name (tools/gen_docs.py; do not edit) -->
    ...
    <!-- END GENERATED: name -->

and is rebuilt from the code: the diagnostic reference from the code registries
(``templiqx_core.CORE_CODES``, ``templiqx_application.APPLICATION_CODES`` and ``PORT_CODES``),
the CLI reference from the click command tree, the operation table from the service catalog,
and the contract and package field tables from the msgspec DTOs in ``templiqx_contracts``. The
prose around the markers is written by hand.

Usage (from the repository root, in the workspace environment)::

    uv run --frozen python tools/gen_docs.py          # rewrite the generated parts
    uv run --frozen python tools/gen_docs.py --check  # exit 1 when a page is out of date

``tests/docs/test_generated.py`` runs the check, so a change to a DTO, a code, the catalog or a
command that is not reflected in the docs fails the suite.
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click
import msgspec

import templiqx_contracts as tc
from templiqx_application import (
    APPLICATION_CODES,
    BATCH_CODES,
    CATALOG,
    PORT_CODES,
    OperationSpec,
)
from templiqx_cli.app import build_group
from templiqx_cli.layout import MERGED, layout_for
from templiqx_core import CORE_CODES, parse_manifest
from templiqx_ports import RETRYABLE_CODES

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- BEGIN GENERATED: {name} (tools/gen_docs.py; do not edit) -->"
END = "<!-- END GENERATED: {name} -->"
HELP_WIDTH = 100


# --- helpers --------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)
    return "\n".join(lines)


STRUCT_INTRO: dict[str, str] = {
    "PackageManifest": "The package manifest, `templiqx.yaml`, at the root of the package "
    "folder. Only `api_version`, `package` and `version` are required; the reader fills in "
    "the rest.",
}


def _first_paragraph(doc: str | None) -> str:
    text = " ".join((doc or "").strip().split("\n\n")[0].split())
    return text.replace("``", "`")


# --- diagnostics ----------------------------------------------------------------------------


def diagnostics() -> str:
    """Every ``TQX_*`` code with its fix hint, grouped by the layer that owns it."""
    core = _table(["code", "how to fix it"], ((f"`{c}`", h) for c, h in sorted(CORE_CODES.items())))
    application = _table(
        ["code", "how to fix it"],
        ((f"`{c}`", h) for c, h in sorted(APPLICATION_CODES.items()) if c not in CORE_CODES),
    )
    retryable = {code.value for code in RETRYABLE_CODES}
    ports = _table(
        ["code", "retryable", "how to fix it"],
        ((f"`{c}`", "yes" if c in retryable else "no", h) for c, h in sorted(PORT_CODES.items())),
    )
    shared = sorted(set(CORE_CODES) & set(APPLICATION_CODES))
    note = ""
    if shared:
        listed = ", ".join(f"`{c}`" for c in shared)
        note = (
            f"\n\nAlso raised by the application with its own wording: {listed} "
            "(listed with the core codes)."
        )
    batch = _table(
        ["code", "how to fix it"], ((f"`{c}`", h) for c, h in sorted(BATCH_CODES.items()))
    )
    total = len(set(CORE_CODES) | set(APPLICATION_CODES) | set(PORT_CODES) | set(BATCH_CODES))
    return (
        f"{total} codes.\n\n"
        f"### Contract language (templiqx-core)\n\n{core}\n\n"
        f"### Packages, loading, execution and service calls (templiqx-application)\n\n"
        f"{application}{note}\n\n"
        f"### Storage and runtimes (templiqx-ports, relayed by the application)\n\n{ports}\n\n"
        f"### Batch runs (templiqx batch, templiqx-ray; see [batch runs](../batch.md))\n\n{batch}"
    )


# --- the catalog and the CLI ----------------------------------------------------------------


def _command_of(spec: OperationSpec) -> str:
    for merged in MERGED:
        if spec.name in (merged.short, merged.long):
            return merged.command
    required = tuple(p.name for p in spec.parameters if p.required and p.type == "string")
    return layout_for(spec.name, required).command


def _default(value: Any, required: bool) -> str:
    if required:
        return "required"
    return f"`{msgspec.json.encode(value).decode()}`"


def _effects(spec: OperationSpec) -> str:
    """The behaviour flags in words (MCP carries them as tool annotations)."""
    if spec.read_only:
        words = ["read-only"]
    else:
        words = ["writes", "destructive" if spec.destructive else "additive"]
    if spec.idempotent:
        words.append("idempotent")
    if spec.open_world:
        words.append("open-world on a live runtime")
    return ", ".join(words)


def catalog() -> str:
    """The operations: a summary table, then each operation's title, effects and parameters."""
    rows = [
        (
            f"[`{s.name}`](#{s.name})",
            f"`templiqx {_command_of(s)}`",
            f"`{s.name}`",
            s.summary,
            _effects(s),
        )
        for s in CATALOG
    ]
    parts = [
        _table(["operation (Python)", "CLI command", "MCP tool", "what it does", "effects"], rows)
    ]
    for spec in CATALOG:
        parts.append(
            f"### {spec.name}\n\n**{spec.display_title}** ({_effects(spec)}). {spec.summary}"
        )
        if spec.parameters:
            parts.append(
                _table(
                    ["parameter", "type", "default", "description"],
                    (
                        (f"`{p.name}`", p.type, _default(p.default, p.required), p.description)
                        for p in spec.parameters
                    ),
                )
            )
        else:
            parts.append("No parameters.")
    return "\n\n".join(parts)


def _help_text(command: click.Command, parent: click.Context) -> str:
    ctx = click.Context(
        command,
        info_name=command.name,
        parent=parent,
        terminal_width=HELP_WIDTH,
        max_content_width=HELP_WIDTH,
    )
    return command.get_help(ctx).rstrip()


def cli() -> str:
    """The ``templiqx`` command tree: global options, the command list, each command's help."""
    group = build_group()
    root = click.Context(
        group, info_name="templiqx", terminal_width=HELP_WIDTH, max_content_width=HELP_WIDTH
    )
    options = []
    for param in group.get_params(root):
        record = param.get_help_record(root)
        if record is not None:
            options.append((f"`{record[0]}`", record[1]))
    parts = [
        "Global options (accepted before or after the command name):",
        _table(["option", "meaning"], options),
    ]
    for title, rows in group.sectioned(root):  # as `templiqx --help` lists them; plugins aside
        own = [(name, cmd) for name, cmd in rows if name in group.commands]
        if own:
            parts.append(f"**{title}**")
            parts.append(
                _table(
                    ["command", "what it does"],
                    (
                        (f"[`templiqx {name}`](#templiqx-{name})", cmd.get_short_help_str(200))
                        for name, cmd in own
                    ),
                )
            )
    for name, command in group.commands.items():
        parts.append(f"### templiqx {name}\n\n```text\n{_help_text(command, root)}\n```")
    return "\n\n".join(parts)


# --- the contract and package formats -------------------------------------------------------

_EXPR = typing.get_args(tc.Expr)
_NODE = typing.get_args(tc.Node)

FIELD_DOCS: dict[tuple[str, str], str] = {
    ("Contract", "api_version"): "Always `templiqx/v1alpha1` (`TQX_API_VERSION` otherwise).",
    ("Contract", "id"): "ASCII letters, digits, `.`, `_`, `-`; equals the file name "
    "`contracts/<id>.yaml` and the manifest's inventory entry.",
    ("Contract", "version"): "A SemVer 2.0 version such as `1.0.0` (no `v` prefix).",
    ("Contract", "description"): "Free text for people; part of the fingerprint.",
    ("Contract", "inputs"): "Values the caller supplies, by name.",
    ("Contract", "context"): "Values the host supplies (locale, flags, authorized context), "
    "by name.",
    ("Contract", "capabilities"): "What the runtime must offer, e.g. `text`, "
    "`structured_output`; compiling for a target without one is `TQX_CAPABILITY_UNSUPPORTED`.",
    ("Contract", "messages"): "The role messages, at least one.",
    ("Contract", "output_schema"): "The JSON Schema (bounded subset) the model output must "
    "satisfy.",
    ("Contract", "runtime_policy"): "Opaque hints for the runtime (`temperature`, "
    "`max_tokens`, ...), copied into the compiled interaction.",
    ("Contract", "extensions"): "Namespaced (`vendor.option`), capability-gated values, each "
    "checked by its own schema.",
    ("Contract", "components"): "Reusable content, by name: typed or legacy.",
    ("Contract", "provenance"): "String metadata (owner, classification, ...).",
    ("Contract", "evals"): "Inline eval fixtures, run by `test_package` and `run_eval`.",
    ("Contract", "tools"): "Tools the model may call (see [tools](#tools)); absent when none "
    "are declared.",
    ("Contract", "tool_choice"): "`auto` (the default), `required`, `none`, or `{tool: NAME}` "
    "to force one tool; only with tools.",
    ("Contract", "parallel_tool_calls"): "Whether one answer may call several tools (default "
    "`true`); only with tools.",
    ("ToolSpec", "name"): "1 to 64 ASCII letters, digits, `_` or `-` (the OpenAI function-name "
    "rule); unique in the contract.",
    ("ToolSpec", "description"): "What the tool does and when to call it; not blank.",
    ("ToolSpec", "arguments"): "JSON Schema (bounded subset, `type: object`) of the call's "
    "arguments, or a pinned `tool_contract:` reference.",
    ("NamedToolChoice", "tool"): "The declared tool the model must call.",
    ("FieldSpec", "schema"): "A JSON Schema in the bounded subset.",
    ("FieldSpec", "required"): "Whether a request must supply the value.",
    ("FieldSpec", "description"): "Free text for people and agents.",
    ("MessageTemplate", "role"): "Who speaks.",
    ("MessageTemplate", "content"): "Content nodes rendered and concatenated in order.",
    ("ExtensionSpec", "capability"): "The target capability that must be present to compile.",
    ("ExtensionSpec", "schema"): "Schema of `value` (or a `tool_contract:` reference).",
    ("ExtensionSpec", "value"): "The value passed to the runtime in the compiled interaction.",
    ("TypedComponent", "parameters"): "Declared parameters, typed like inputs.",
    ("TypedComponent", "content"): "The component's content nodes.",
    ("EvalFixture", "id"): "Names the fixture (`run_eval` selects by it).",
    ("EvalFixture", "inputs"): "The request's inputs.",
    ("EvalFixture", "context"): "The request's context.",
    ("EvalFixture", "fake_output"): "What the deterministic fake runtime returns; checked "
    "against `output_schema`.",
    ("RenderRequest", "inputs"): "Input values by name.",
    ("RenderRequest", "context"): "Context values by name.",
    ("PackageManifest", "api_version"): "Always `templiqx/v1alpha1`.",
    ("PackageManifest", "package"): "The package name; equals its folder name.",
    ("PackageManifest", "version"): "SemVer 2.0 version of the package.",
    ("PackageManifest", "description"): "Free text.",
    ("PackageManifest", "contracts"): "Contract ids (`contracts/<id>.yaml`).",
    ("PackageManifest", "components"): "Package-relative paths of partials (`include` targets).",
    ("PackageManifest", "evals"): "Package-relative paths of eval request files.",
    ("PackageManifest", "migrations"): "Package-relative paths of migration notes.",
    ("PackageManifest", "templates"): "Package-relative paths of templates.",
    ("PackageManifest", "provenance"): "String metadata; `requires_authorized_context: "
    '"true"` demands an authorized merge context.',
    ("PackageManifest", "signatures"): "Signatures of the package identity (`sign_package` "
    "writes them).",
    ("PackageManifest", "dependencies"): "Other packages under the same root, pinned by their "
    "identity fingerprint (with a `templiqx.lock`).",
    ("PackageManifest", "tool_contracts"): "Named tool schemas that extensions reference as "
    "`$ref: tool_contract:<name>`.",
    ("PackageManifest", "translations"): "Locales with a bundle `translations/<locale>.yaml`.",
    ("PackageManifest", "definitions"): "Package-relative paths of report definitions.",
    ("PackageSignature", "key_id"): "Names the key that signed.",
    ("PackageSignature", "algorithm"): "`sha256-keyed`.",
    ("PackageSignature", "value"): "The signature (hex).",
    ("ToolContractRef", "fingerprint"): "The pin an extension's reference must repeat.",
    ("ToolContractRef", "schema"): "The tool's JSON Schema, inlined where referenced.",
    ("PackageLock", "dependencies"): "Each dependency's folder and identity fingerprint.",
    ("LockedDependency", "path"): "The dependency's folder, relative to the root.",
    ("LockedDependency", "fingerprint"): "Its identity fingerprint.",
    ("Diagnostic", "code"): "Stable `TQX_*` code (see the diagnostic reference).",
    ("Diagnostic", "severity"): "`error`, `warning` or `info`; any error makes `ok` false.",
    ("Diagnostic", "message"): "What is wrong, in words.",
    ("Diagnostic", "file"): "Package-relative file, when one is concerned.",
    ("Diagnostic", "json_pointer"): "Where in the document or request (RFC 6901 style).",
    ("Diagnostic", "span"): "Line and column in the source file (parse errors).",
    ("Diagnostic", "help"): "How to fix it.",
    ("OperationEnvelope", "api_version"): "Always `templiqx/v1alpha1`.",
    ("OperationEnvelope", "operation"): "The catalog operation that answered.",
    ("OperationEnvelope", "ok"): "True when no diagnostic is an error.",
    ("OperationEnvelope", "result"): "The operation's result; absent when there is none.",
    ("OperationEnvelope", "diagnostics"): "Every diagnostic, errors first as found.",
    ("OperationEnvelope", "fingerprints"): "Named SHA-256 fingerprints of canonical JSON.",
    ("OperationEnvelope", "stream_events"): "The events of a streamed execution; absent when "
    "empty.",
    ("OperationEnvelope", "usage"): "Tokens a model execution cost, when the runtime reports "
    "them; absent otherwise. Never part of a receipt or fingerprint.",
    ("Usage", "prompt_tokens"): "Tokens of the prompt (the compiled messages).",
    ("Usage", "completion_tokens"): "Tokens the model generated.",
    ("Usage", "total_tokens"): "Their total, as the server reports it.",
    ("Delta", "text"): "A fragment of generated text.",
    ("ToolCallDelta", "name"): "The tool being called (carried forward from its first fragment).",
    ("ToolCallDelta", "arguments_fragment"): "A fragment of the call's JSON arguments.",
    ("Complete", "adapter"): "The runtime's descriptor (`id`, `version`, `capabilities`).",
    ("Complete", "request_fingerprint"): "Fingerprint of the execution request.",
    ("Complete", "output_fingerprint"): "Fingerprint of `output`.",
    ("Complete", "output"): "The model output (text, JSON, or `{tool_calls: [...]}`).",
    ("Complete", "output_schema_valid"): "Whether the adapter found `output` valid.",
    ("Failed", "code"): "The failure's `TQX_RUNTIME_*` code.",
    ("Failed", "message"): "What went wrong: the error's display text. It may end with the "
    "server's own error message, sanitised (never a credential, never the model's output).",
}
NODE_DOCS: dict[str, str] = {
    "text": "Literal text. `${...}` or `{{...}}` inside it is just text: there is no inline "
    "template syntax.",
    "interpolate": "The value of `expression`, passed through `filters` left to right. Strings "
    "appear as they are; numbers and booleans as JSON; arrays, objects and `null` need the "
    "`json` filter.",
    "when": "Renders `then` when the boolean `condition` holds, else `else`. No truthiness: "
    "the condition must be a boolean.",
    "for_each": "Renders `body` once per element of the array `collection`, with the element "
    "bound to the name `item`, joined by `separator`.",
    "component": "Renders the named component with its arguments bound from the `with` "
    "expressions. A component body sees only its arguments.",
    "include": "Splices in a partial (a YAML list of nodes) from the package, or from the "
    "dependency named by `from_dependency`, before validation.",
}

EXPR_DOCS: dict[str, str] = {
    "ref": "A dotted path: `inputs.<name>...`, `context.<name>...`, a `for_each` item or a "
    "component parameter; numeric segments index arrays.",
    "literal": "A constant JSON value.",
    "equals": "Strict JSON equality: same type and value (`1` never equals `1.0`).",
    "not": "Negation of a boolean.",
    "and": "All operands true; stops at the first false. An empty list is true.",
    "or": "Any operand true; stops at the first true. An empty list is false.",
}

FILTER_DOCS: dict[str, tuple[str, str]] = {
    "trim": ("Removes leading and trailing Unicode white space.", '`"  Ada "` -> `Ada`'),
    "lower": ("Unicode lower case.", "`Audit-Log` -> `audit-log`"),
    "upper": ("Unicode upper case (`ß` becomes `SS`).", "`business` -> `BUSINESS`"),
    "json": (
        "Compact canonical JSON of the value (sorted keys); the way to show arrays, objects "
        "and `null`.",
        '`{"b":1,"a":[2]}` -> `{"a":[2],"b":1}`',
    ),
    "format_date": (
        "An ISO `YYYY-MM-DD` string in the reader's date order: `nl` `DD-MM-YYYY`, `de` "
        "`DD.MM.YYYY`, `en-US` `MM/DD/YYYY`, others ISO.",
        "`2026-09-01` (nl-NL) -> `01-09-2026`",
    ),
    "format_number": (
        "A number with two decimals and grouping: `.`/`,` for `nl` and `de`, `,`/`.` otherwise.",
        "`1249.5` (nl-NL) -> `1.249,50`",
    ),
    "format_currency": (
        "`format_number` with a currency symbol: `€` for `nl`, `de`, `fr`, `es`, `it`, `pt`; "
        "`$` otherwise.",
        "`1249.5` (nl-NL) -> `€1.249,50`",
    ),
    "translate": (
        "Looks the key up in the package's translation bundles: `context.locale`, its "
        "language, `context.fallback_locale`, its language, then `en`.",
        "`priority.high` (nl-NL) -> `Hoge prioriteit`",
    ),
}


def _type_name(tp: Any, local: frozenset[str] = frozenset()) -> str:
    """A reader's name for a field type; Structs in ``local`` link to their section."""
    if tp is Any:
        return "JSON value"
    if tp is str:
        return "string"
    if tp is bool:
        return "boolean"
    if tp is int:
        return "integer"
    args = typing.get_args(tp)
    if set(args) == set(_EXPR):
        return "[expression](#expressions)"
    if set(args) == set(_NODE):
        return "[node](#content-nodes)"
    if set(args) == set(typing.get_args(tc.StreamEvent)):
        return "stream event"
    origin = typing.get_origin(tp)
    if origin is list:
        return f"list of {_type_name(args[0], local)}"
    if origin is dict:
        return f"map of {_type_name(args[0], local)} to {_type_name(args[1], local)}"
    if origin is typing.Literal:
        return " | ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        if tc.TypedComponent in args:
            return "[typed component](#typedcomponent) or list of [node](#content-nodes)"
        named = [a for a in args if a not in (type(None), msgspec.UnsetType)]
        suffix = " or `null`" if type(None) in args else ""
        return " or ".join(_type_name(a, local) for a in named) + suffix
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        if tp.__name__ in local:
            return f"[{tp.__name__}](#{tp.__name__.lower()})"
        return f"`{tp.__name__}`"
    raise TypeError(f"gen_docs: no reader's name for the type {tp!r}")


_MINIMAL_MANIFEST = "api_version: templiqx/v1alpha1\npackage: p\nversion: 1.0.0\n"


def _manifest_yaml_defaults() -> dict[str, Any]:
    """What the manifest reader fills in for each absent key (the DTO itself has no defaults)."""
    parsed, diagnostics = parse_manifest(_MINIMAL_MANIFEST)
    assert parsed is not None, diagnostics
    lines = _MINIMAL_MANIFEST.splitlines()
    required = {line.split(":")[0] for line in lines}
    for key in required:  # each key of the minimal manifest really is required
        without = "\n".join(line for line in lines if not line.startswith(key))
        assert parse_manifest(without)[0] is None, key
    return {
        f.name: getattr(parsed, f.name)
        for f in msgspec.structs.fields(tc.PackageManifest)
        if f.name not in required
    }


def _field_default(field: msgspec.structs.FieldInfo, yaml: dict[str, Any] | None = None) -> str:
    if yaml is not None:
        if field.name not in yaml:
            return "required"
        return f"`{msgspec.json.encode(yaml[field.name]).decode()}`"
    if field.required:
        return "required"
    if field.default is msgspec.UNSET:
        return "absent"
    if field.default_factory is not msgspec.NODEFAULT:
        return f"`{msgspec.json.encode(field.default_factory()).decode()}`"
    return f"`{msgspec.json.encode(field.default).decode()}`"


def _fields(struct: type[msgspec.Struct], local: frozenset[str], with_docs: bool = True) -> str:
    rows = []
    yaml = _manifest_yaml_defaults() if struct is tc.PackageManifest else None
    for field in msgspec.structs.fields(struct):
        type_name = _type_name(field.type, local)
        row = [f"`{field.encode_name}`", type_name, _field_default(field, yaml)]
        if with_docs:
            doc = FIELD_DOCS.get((struct.__name__, field.name))
            if doc is None:
                raise KeyError(f"gen_docs: describe {struct.__name__}.{field.name} in FIELD_DOCS")
            row.append(doc)
        rows.append(row)
    header = ["field", "type", "default", "meaning"] if with_docs else ["field", "type", "default"]
    return _table(header, rows)


def _structs(structs: list[type[msgspec.Struct]]) -> str:
    local = frozenset(s.__name__ for s in structs)
    parts = []
    for struct in structs:
        intro = STRUCT_INTRO.get(struct.__name__) or _first_paragraph(struct.__doc__)
        parts.append(f"### {struct.__name__}\n\n{intro}")
        parts.append(_fields(struct, local))
    return "\n\n".join(parts)


def contract_fields() -> str:
    """The contract document and the structures inside it."""
    return _structs(
        [
            tc.Contract,
            tc.FieldSpec,
            tc.MessageTemplate,
            tc.ExtensionSpec,
            tc.ToolSpec,
            tc.NamedToolChoice,
            tc.TypedComponent,
            tc.EvalFixture,
            tc.RenderRequest,
        ]
    ) + (f"\n\nRoles: {', '.join(f'`{r}`' for r in tc.ROLES)}.")


def _tagged(classes: Iterable[type[msgspec.Struct]], docs: dict[str, str]) -> str:
    parts = []
    for cls in classes:
        tag = str(cls.__struct_config__.tag)
        text = docs.get(tag)
        if text is None:
            raise KeyError(f"gen_docs: describe the kind {tag!r}")
        parts.append(f"#### `{tag}`\n\n{text}")
        if msgspec.structs.fields(cls):
            parts.append(_fields(cls, frozenset(), with_docs=False))
    if {str(c.__struct_config__.tag) for c in classes} != set(docs):
        raise KeyError("gen_docs: a documented kind does not exist")
    return "\n\n".join(parts)


def content_nodes() -> str:
    """Every content node kind."""
    return _tagged(_NODE, NODE_DOCS)


def expressions() -> str:
    """Every expression kind."""
    return _tagged(_EXPR, EXPR_DOCS)


def filters() -> str:
    """Every filter."""
    if set(FILTER_DOCS) != set(tc.FILTER_NAMES):
        raise KeyError(f"gen_docs: FILTER_DOCS must describe exactly {tc.FILTER_NAMES}")
    rows = ((f"`{name}`", *FILTER_DOCS[name]) for name in tc.FILTER_NAMES)
    return _table(["filter", "what it does", "example"], rows)


def package_fields() -> str:
    """The manifest, the lock and their parts."""
    return _structs(
        [
            tc.PackageManifest,
            tc.PackageSignature,
            tc.ToolContractRef,
            tc.PackageLock,
            tc.LockedDependency,
        ]
    )


def envelope_fields() -> str:
    """The operation envelope and the diagnostic."""
    return _structs([tc.OperationEnvelope, tc.Diagnostic, tc.Usage])


def stream_events() -> str:
    """The four stream events."""
    return _structs([tc.Delta, tc.ToolCallDelta, tc.Complete, tc.Failed])


# --- the pages ------------------------------------------------------------------------------

BLOCKS: dict[str, dict[str, Callable[[], str]]] = {
    "docs/reference/diagnostics.md": {"diagnostics": diagnostics},
    "docs/reference/catalog.md": {"catalog": catalog, "envelope": envelope_fields},
    "docs/reference/cli.md": {"cli": cli},
    "docs/reference/contract.md": {
        "contract-fields": contract_fields,
        "content-nodes": content_nodes,
        "expressions": expressions,
        "filters": filters,
    },
    "docs/reference/packages.md": {"package-fields": package_fields},
    "docs/streaming.md": {"stream-events": stream_events},
}


def render(page: str, text: str) -> str:
    """``text`` with every generated block of ``page`` rebuilt."""
    for name, build in BLOCKS[page].items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
        found = list(pattern.finditer(text))
        if len(found) != 1:
            raise ValueError(f"{page}: expected exactly one block '{name}' ({begin} ... {end})")
        start, stop = found[0].span()
        text = f"{text[:start]}{begin}\n\n{build().strip()}\n\n{end}{text[stop:]}"
    return text


def stale_pages(root: Path = ROOT) -> list[str]:
    """The pages whose generated blocks differ from what the code says now."""
    stale = []
    for page in BLOCKS:
        current = (root / page).read_text(encoding="utf-8")
        if render(page, current) != current:
            stale.append(page)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is out of date")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for page in stale:
            print(f"out of date: {page} (run: uv run --frozen python tools/gen_docs.py)")
        return 1 if stale else 0
    for page in BLOCKS:
        path = ROOT / page
        current = path.read_text(encoding="utf-8")
        updated = render(page, current)
        if updated != current:
            path.write_text(updated, encoding="utf-8")
            print(f"updated {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
