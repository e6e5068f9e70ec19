"""The server's instructions, resources and prompts: what an agent reads before calling tools.

Resources: three fixed ones (the catalog, the packages, the workspace) and two templates, one
package (``templiqx://packages/{package}``: its validation) and one contract
(``templiqx://packages/{package}/contracts/{contract}``: what ``inspect_contract`` returns).
Every read is computed when it is asked for. Prompts take a required ``package`` argument; a
``prompts/get`` without it is the JSON-RPC error -32602, as MCP prescribes.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from templiqx_application import TempliqxService
from templiqx_contracts import quote_input
from templiqx_mcp.setting import ServerSetting
from templiqx_mcp.tools import INVALID_PARAMS, envelope_text

__all__ = ["RESOURCE_NOT_FOUND", "RESOURCE_TEMPLATES", "Guidance", "ServerSetting", "instructions"]

RESOURCE_NOT_FOUND = -32002

SAFETY = (
    "Workspace writes are package-scoped: artifacts land under <workspace>/<package>/, and "
    "absolute paths, traversal, backslashes and symlink escapes are rejected. The workspace "
    "folder is created by the first artifact written there; reads never write."
)


def _discovered(service: TempliqxService) -> str:
    envelope = service.discover_packages()
    if not envelope.ok:
        return "Package discovery failed at startup; call discover_packages to see the diagnostics."
    data = envelope.to_builtins()
    names = [str(entry.get("package")) for entry in data.get("result", [])]
    if not names:
        return "No packages discovered yet: call create_package to bootstrap one."
    return "Discovered packages: " + ", ".join(names)


def _reach(service: TempliqxService) -> str:
    reach = service.runtime_reach
    if not reach.live:
        return "offline (nothing leaves this machine)"
    cost = " and may cost money" if reach.paid else ""
    return f"a live model: each execution reaches outside this machine{cost}"


def instructions(service: TempliqxService, setting: ServerSetting) -> str:
    """The ``instructions`` text of ``initialize``: how to use the tools, and where they work."""
    lines = [
        "templiqx-mcp serves the templiqx contract engine: each tool runs one operation of the "
        "templiqx service and returns its operation envelope (api_version, operation, ok, "
        "result, diagnostics, fingerprints).",
        "Typical flow: discover_packages -> validate_package -> compile_contract -> "
        "execute_contract. execute_contract with stream: true and a progressToken reports "
        "the answer as notifications/progress while the model generates, at most every 50 ms "
        "(message: how far it is; _meta: templiqx/events, the events since the last one, and "
        "for a structured contract templiqx/partial, the answer's JSON value so far); "
        "cancelling the request cancels the runtime.",
        "Evals: list_evals, then run_eval with one returned contract_id/fixture_id pair and "
        "its required_capabilities as capabilities; test_package runs them all.",
        "Before compile_contract, render_contract or execute_contract, learn a contract's "
        "inputs and context with explain_contract (names) or inspect_contract (types).",
        "Each tool's annotations say whether it only reads (readOnlyHint), may replace or "
        "remove data (destructiveHint) or reaches outside this machine (openWorldHint); "
        "writes take the fingerprint named in their expected_fingerprint description.",
        "With no package yet, call create_package, then put_contract with YAML source.",
        "Problems with a package or contract come back as diagnostics in an ok:false envelope, "
        "not as errors; isError only marks arguments that do not match a tool's input schema.",
        f"Packages root: {setting.packages_root}",
        _discovered(service),
        f"Workspace root: {setting.workspace_root}",
        f"Runtime for execute_contract: {setting.runtime}, {_reach(service)} (evals always "
        "run on the deterministic fake).",
        SAFETY,
    ]
    return "\n".join(lines)


_RESOURCES = [
    ("templiqx://catalog", "catalog", "The operation catalog: every tool's operation."),
    ("templiqx://packages", "packages", "The packages under the packages root (discovery)."),
    ("templiqx://workspace", "workspace", "The writable artifact workspace and its safety rules."),
]

_PACKAGE_PREFIX = "templiqx://packages/"

RESOURCE_TEMPLATES = [
    (
        _PACKAGE_PREFIX + "{package}",
        "package",
        "One package, validated: its contracts with their fingerprints, or the diagnostics "
        "that say what is wrong (what validate_package returns).",
    ),
    (
        _PACKAGE_PREFIX + "{package}/contracts/{contract}",
        "contract",
        "One contract as parsed: inputs, context, messages, output schema (what "
        "inspect_contract returns).",
    ),
]
"""The resource templates: (URI template, name, description)."""


def _template_call(uri: str) -> tuple[str, dict[str, str]] | None:
    """The operation and arguments a templated URI reads, or ``None`` for another URI."""
    if not uri.startswith(_PACKAGE_PREFIX):
        return None
    parts = [unquote(part) for part in uri[len(_PACKAGE_PREFIX) :].split("/")]
    if any(not part for part in parts):
        return None
    if len(parts) == 1:
        return "validate_package", {"package": parts[0]}
    if len(parts) == 3 and parts[1] == "contracts":
        return "inspect_contract", {"package": parts[0], "contract": parts[2]}
    return None


_PROMPTS = {
    "bootstrap": (
        "Discover the package, or create it, then validate it.",
        "Call discover_packages. If the package {package} is not listed, call create_package "
        "with name {package} and version 0.1.0, then add contracts with put_contract. Then call "
        "validate_package for {package} and fix every error diagnostic it reports, using each "
        "diagnostic's help line. Keep package sources apart from the writable workspace.",
    ),
    "run-eval": (
        "List a package's evals, then run one.",
        "Call list_evals for the package {package}. Pick one returned case and call run_eval "
        "with exactly its contract_id as contract, its fixture_id as fixture_id and its "
        "required_capabilities as capabilities. Report whether it passed and, if not, each "
        "diagnostic with its help line.",
    ),
}


class Guidance:
    """Resources and prompts over one service."""

    def __init__(self, service: TempliqxService, setting: ServerSetting) -> None:
        self._service = service
        self._setting = setting

    async def _read(self, uri: str) -> str:
        templated = _template_call(uri)
        if templated is not None:
            name, arguments = templated
            envelope = await self._service.ainvoke(name, arguments)
            return envelope_text(envelope.to_builtins())
        if uri == "templiqx://catalog":
            return envelope_text(self._service.catalog().to_builtins())
        if uri == "templiqx://packages":
            return envelope_text(self._service.discover_packages().to_builtins())
        if uri == "templiqx://workspace":
            data: dict[str, Any] = {
                "default": self._setting.workspace_is_default,
                "safety": SAFETY,
                "workspace": self._setting.workspace_root,
            }
            return json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        raise MCPError(
            code=RESOURCE_NOT_FOUND,
            message=f"unknown resource: {uri}",
            data={"uri": uri, "templates": [template for template, _, _ in RESOURCE_TEMPLATES]},
        )

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """``resources/list``: the three resources."""
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=uri, name=name, description=description, mime_type="application/json"
                )
                for uri, name, description in _RESOURCES
            ]
        )

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """``resources/templates/list``: one package, one contract."""
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=template,
                    name=name,
                    description=description,
                    mime_type="application/json",
                )
                for template, name, description in RESOURCE_TEMPLATES
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """``resources/read``: computed on every read; an unknown URI is error -32002."""
        uri = str(params.uri)
        text = await self._read(uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        """``prompts/list``: ``bootstrap`` and ``run-eval``, each taking ``package``."""
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=name,
                    description=description,
                    arguments=[
                        types.PromptArgument(
                            name="package", description="The package name.", required=True
                        )
                    ],
                )
                for name, (description, _) in _PROMPTS.items()
            ]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        """``prompts/get``: one user message; a missing ``package`` is error -32602."""
        entry = _PROMPTS.get(params.name)
        if entry is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"unknown prompt: {params.name}",
                data={"prompts": list(_PROMPTS)},
            )
        description, template = entry
        arguments = params.arguments or {}
        unknown = sorted(name for name in arguments if name != "package")
        package = arguments.get("package")
        if not isinstance(package, str) or not package.strip() or unknown:
            problem = (
                f"prompt '{params.name}' takes only the argument 'package', not "
                + ", ".join(quote_input(name) for name in unknown)
                if unknown
                else f"prompt '{params.name}' requires the argument 'package' (a package name)"
            )
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Invalid params: {problem}",
                data={"prompt": params.name, "required": ["package"]},
            )
        text = template.format(package=json.dumps(package, ensure_ascii=False))
        return types.GetPromptResult(
            description=description,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
            ],
        )
