"""Tools a contract declares, and the rule that decides whether a tool-call answer is valid.

A contract may declare tools the model can be asked to call (``tools``), how the model may use
them (``tool_choice``) and whether it may call several at once (``parallel_tool_calls``). The
three fields are *additive*: a contract or compiled interaction without tools leaves them
unset, and an unset field is never serialized, so every existing contract, compiled
interaction and receipt keeps its fingerprint.

A model that answers with tool calls yields the receipt output
``{"tool_calls": [{"id": …, "name": …, "arguments": {…}}, …]}`` (DECISIONS 7). For an
interaction that declares tools, such an answer is judged by the declared tools instead of the
output schema (:func:`tool_answer_problems`): every call names a declared tool, its arguments
satisfy that tool's schema, and the tool choice allows it. Any other output is checked against
the output schema as usual. The rule lives here, in the bottom layer, so the application and
every adapter apply the same one (DECISIONS 8); the schema engine is passed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeAlias

import msgspec
from msgspec import UnsetType

if TYPE_CHECKING:
    from templiqx_contracts.contract import Contract
    from templiqx_contracts.runtime import CompiledInteraction

__all__ = [
    "TOOL_CALLING",
    "TOOL_CALLS_KEY",
    "TOOL_CALL_ARGUMENTS",
    "TOOL_CALL_CHOICE",
    "TOOL_CALL_REQUIRED",
    "TOOL_CALL_SHAPE",
    "TOOL_CALL_UNDECLARED",
    "TOOL_CHOICE_MODES",
    "TOOL_NAME",
    "ArgumentCheck",
    "NamedToolChoice",
    "ToolCallProblem",
    "ToolCallSplitter",
    "ToolChoice",
    "ToolSpec",
    "declared_tools",
    "interaction_output_valid",
    "is_tool_answer",
    "parallel_tool_calls_of",
    "tool_answer_problems",
    "tool_choice_of",
]

TOOL_CALLING: Final = "tool_calling"
"""The runtime capability of an adapter that offers declared tools to its model and maps the
model's tool calls to the ``{"tool_calls": [...]}`` output."""

TOOL_CALLS_KEY: Final = "tool_calls"
"""The only member of a tool-call answer."""

TOOL_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""A tool name: the OpenAI function-name rule (``fullmatch``)."""

TOOL_CHOICE_MODES: Final = ("auto", "required", "none")
"""The tool choices given as a word; a mapping ``{tool: NAME}`` forces one tool."""

# Codes of the answer rule (registered with their fix hints in templiqx_core.CORE_CODES).
TOOL_CALL_SHAPE: Final = "TQX_TOOL_CALL_SHAPE"
TOOL_CALL_UNDECLARED: Final = "TQX_TOOL_CALL_UNDECLARED"
TOOL_CALL_ARGUMENTS: Final = "TQX_TOOL_CALL_ARGUMENTS"
TOOL_CALL_CHOICE: Final = "TQX_TOOL_CALL_CHOICE"
TOOL_CALL_REQUIRED: Final = "TQX_TOOL_CALL_REQUIRED"

_CALL_KEYS: Final = frozenset(("id", "name", "arguments"))


class ToolSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One declared tool: its name, what it does, and the JSON Schema of its arguments.

    ``arguments`` is a schema in the bounded subset whose type is ``object`` (or, before the
    package loader resolves it, a ``{"$ref": "tool_contract:<name>", "fingerprint": …}`` stub).
    """

    name: str
    description: str
    arguments: Any


class NamedToolChoice(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``tool_choice: {tool: NAME}``: the model must call this tool (and only it)."""

    tool: str


ToolChoice: TypeAlias = str | NamedToolChoice
"""``"auto"`` (the default), ``"required"``, ``"none"`` or a :class:`NamedToolChoice`."""


def declared_tools(holder: Contract | CompiledInteraction) -> list[ToolSpec]:
    """The tools a contract or compiled interaction declares (empty when unset)."""
    tools = holder.tools
    return [] if isinstance(tools, UnsetType) else tools


def tool_choice_of(holder: Contract | CompiledInteraction) -> ToolChoice:
    """The declared tool choice, ``"auto"`` when unset."""
    choice = holder.tool_choice
    return "auto" if isinstance(choice, UnsetType) else choice


def parallel_tool_calls_of(holder: Contract | CompiledInteraction) -> bool:
    """Whether several calls may come in one answer; ``True`` when unset."""
    parallel = holder.parallel_tool_calls
    return True if isinstance(parallel, UnsetType) else parallel


class ToolCallProblem(NamedTuple):
    """One reason a tool-call answer is invalid: a ``TQX_*`` code, a message and a pointer."""

    code: str
    message: str
    pointer: str


ArgumentCheck: TypeAlias = Callable[[Any, Any, str], list[ToolCallProblem]]
"""``(schema, arguments, pointer)`` → the problems of ``arguments`` under ``schema``."""


def is_tool_answer(output: Any) -> bool:
    """Whether ``output`` has the shape of a tool-call answer: an object whose only member is
    ``tool_calls``."""
    return isinstance(output, dict) and len(output) == 1 and TOOL_CALLS_KEY in output


def _forces_a_call(choice: ToolChoice) -> bool:
    return isinstance(choice, NamedToolChoice) or choice == "required"


def tool_answer_problems(
    tools: list[ToolSpec],
    choice: ToolChoice,
    parallel: bool,
    output: Any,
    check_arguments: ArgumentCheck,
) -> list[ToolCallProblem] | None:
    """Judge ``output`` by the declared tools; ``None`` when the output schema decides instead.

    ``None`` when no tool is declared, or when ``output`` is not a tool-call answer and the
    tool choice allows a plain answer. Otherwise the list of problems (empty: valid):

    * a plain answer where the tool choice forces a call → ``TQX_TOOL_CALL_REQUIRED``;
    * ``tool_calls`` not a non-empty list, or a call that is not ``{id?, name, arguments}``
      (``id`` a string or null) → ``TQX_TOOL_CALL_SHAPE``;
    * a call naming a tool that is not declared → ``TQX_TOOL_CALL_UNDECLARED``;
    * calls the tool choice forbids (``none``, another tool than the forced one, more than one
      call when ``parallel_tool_calls`` is false) → ``TQX_TOOL_CALL_CHOICE``;
    * whatever ``check_arguments`` finds in each call's arguments (``TQX_TOOL_CALL_ARGUMENTS``).

    Pointers address the receipt output: ``/output/tool_calls/{index}/…``.
    """
    if not tools:
        return None
    if not is_tool_answer(output):
        if _forces_a_call(choice):
            wanted = f"tool '{choice.tool}'" if isinstance(choice, NamedToolChoice) else "a tool"
            return [
                ToolCallProblem(
                    TOOL_CALL_REQUIRED,
                    f"the contract's tool_choice requires a call of {wanted}, but the output "
                    "is not a tool-call answer",
                    "/output",
                )
            ]
        return None
    base = f"/output/{TOOL_CALLS_KEY}"
    calls = output[TOOL_CALLS_KEY]
    if not isinstance(calls, list) or not calls:
        return [
            ToolCallProblem(
                TOOL_CALL_SHAPE, "tool_calls must be a non-empty list of tool calls", base
            )
        ]
    problems: list[ToolCallProblem] = []
    if choice == "none":
        problems.append(
            ToolCallProblem(
                TOOL_CALL_CHOICE,
                "the contract's tool_choice is 'none', but the output calls tools",
                base,
            )
        )
    if not parallel and len(calls) > 1:
        problems.append(
            ToolCallProblem(
                TOOL_CALL_CHOICE,
                f"the contract sets parallel_tool_calls to false, but the output makes "
                f"{len(calls)} calls",
                f"{base}/1",
            )
        )
    by_name = {tool.name: tool for tool in tools}
    for index, call in enumerate(calls):
        problems.extend(_call_problems(index, call, by_name, choice, check_arguments))
    return problems


def _call_problems(
    index: int,
    call: Any,
    by_name: dict[str, ToolSpec],
    choice: ToolChoice,
    check_arguments: ArgumentCheck,
) -> list[ToolCallProblem]:
    pointer = f"/output/{TOOL_CALLS_KEY}/{index}"
    if not isinstance(call, dict):
        return [
            ToolCallProblem(
                TOOL_CALL_SHAPE,
                f"tool call {index} must be an object with name, arguments and an optional id",
                pointer,
            )
        ]
    problems: list[ToolCallProblem] = []
    unknown = sorted(str(key) for key in call if key not in _CALL_KEYS)
    if unknown:
        problems.append(
            ToolCallProblem(
                TOOL_CALL_SHAPE,
                f"tool call {index} has unknown member(s) {', '.join(unknown)}; a call has "
                "only id, name and arguments",
                pointer,
            )
        )
    call_id = call.get("id")
    if call_id is not None and not isinstance(call_id, str):
        problems.append(
            ToolCallProblem(
                TOOL_CALL_SHAPE, f"tool call {index} id must be a string or null", f"{pointer}/id"
            )
        )
    name = call.get("name")
    if not isinstance(name, str):
        problems.append(
            ToolCallProblem(
                TOOL_CALL_SHAPE, f"tool call {index} must name a tool (a string)", f"{pointer}/name"
            )
        )
        return problems
    if "arguments" not in call:
        problems.append(
            ToolCallProblem(
                TOOL_CALL_SHAPE, f"tool call {index} has no arguments", f"{pointer}/arguments"
            )
        )
    tool = by_name.get(name)
    if tool is None:
        declared = ", ".join(sorted(by_name))
        problems.append(
            ToolCallProblem(
                TOOL_CALL_UNDECLARED,
                f"tool call {index} names '{name}', which the contract does not declare "
                f"(declared: {declared})",
                f"{pointer}/name",
            )
        )
        return problems
    if isinstance(choice, NamedToolChoice) and name != choice.tool:
        problems.append(
            ToolCallProblem(
                TOOL_CALL_CHOICE,
                f"tool call {index} names '{name}', but the contract's tool_choice forces "
                f"'{choice.tool}'",
                f"{pointer}/name",
            )
        )
    if "arguments" in call:
        problems.extend(
            ToolCallProblem(
                found.code,
                f"tool call {index} ('{name}') arguments: {found.message}",
                found.pointer,
            )
            for found in check_arguments(tool.arguments, call["arguments"], f"{pointer}/arguments")
        )
    return problems


def interaction_output_valid(
    interaction: CompiledInteraction, output: Any, accepts: Callable[[Any, Any], bool]
) -> bool:
    """The receipt's ``output_schema_valid`` for ``output`` (what the application decides).

    ``accepts(schema, value)`` is the bounded schema check (engine plus date formats). Tool
    calls are judged by the declared tools (:func:`tool_answer_problems`), anything else by
    the output schema.
    """

    def check(schema: Any, value: Any, pointer: str) -> list[ToolCallProblem]:
        if accepts(schema, value):
            return []
        return [ToolCallProblem(TOOL_CALL_ARGUMENTS, "arguments violate the schema", pointer)]

    problems = tool_answer_problems(
        declared_tools(interaction),
        tool_choice_of(interaction),
        parallel_tool_calls_of(interaction),
        output,
        check,
    )
    if problems is None:
        return accepts(interaction.output_schema, output)
    return not problems


class ToolCallSplitter:
    """Tells where one tool call's streamed arguments end and the next call's begin.

    ``ToolCallDelta`` events carry a tool name and a fragment of the call's JSON arguments, in
    arrival order, without a call index (DECISIONS 7). Calls arrive one after the other, so a
    new call starts when the name changes or when the previous call's arguments already form a
    complete JSON object, array or string (arguments are objects: a tool's arguments schema has
    type ``object``). :meth:`feed` returns whether ``fragment`` starts a new call; the
    fragments of each call so far are in :attr:`calls` as ``(name, arguments text)``.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self._depth = 0
        self._started = False
        self._in_string = False
        self._escaped = False

    def feed(self, name: str, fragment: str) -> bool:
        """Account for one fragment; whether it starts a new call."""
        complete = self._started and self._depth == 0 and not self._in_string
        new = not self.calls or self.calls[-1][0] != name or complete
        if new:
            self.calls.append((name, ""))
            self._depth = 0
            self._started = self._in_string = self._escaped = False
        last_name, text = self.calls[-1]
        self.calls[-1] = (last_name, text + fragment)
        self._scan(fragment)
        return new

    def _scan(self, fragment: str) -> None:
        for char in fragment:
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif char == "\\":
                    self._escaped = True
                elif char == '"':
                    self._in_string = False
                    if self._depth == 0:
                        self._started = True
            elif char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
                self._started = True
            elif char in "}]":
                self._depth = max(self._depth - 1, 0)

    @classmethod
    def split(cls, fragments: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Every call's ``(name, arguments text)`` from ``(name, fragment)`` pairs in order."""
        splitter = cls()
        for name, fragment in fragments:
            splitter.feed(name, fragment)
        return splitter.calls
