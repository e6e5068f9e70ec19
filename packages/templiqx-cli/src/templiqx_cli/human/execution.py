"""Renderers of the execution operations: compile, render and execute.

Messages are shown role by role with their text as it will reach the model. ``execute`` shows
the model's output first, then how it was produced, in separate steps
(:meth:`ExecuteRenderer.output`, :meth:`ExecuteRenderer.receipt`,
:meth:`ExecuteRenderer.streamed`), so a later addition (token usage, say) is one more step.
"""

from __future__ import annotations

from typing import Any

from templiqx_cli.human.base import Renderer, View
from templiqx_cli.human.blocks import count, indented, json_lines, listing, text_lines
from templiqx_cli.human.contracts import schema_type

__all__ = ["RENDERERS", "message_lines"]


def message_lines(messages: Any, view: View) -> list[str]:
    """Each message as its role, then its text indented."""
    lines: list[str] = []
    for message in messages or []:
        lines.append(view.style.heading(f"{message.get('role', '')}:"))
        lines.extend(indented(text_lines(str(message.get("content", "")))))
    return lines


def _policy(policy: Any) -> str:
    if not isinstance(policy, dict) or not policy:
        return "defaults"
    return ", ".join(f"{key} {value}" for key, value in policy.items())


def _output_shape(schema: Any) -> str:
    shape = schema_type(schema)
    if isinstance(schema, dict) and isinstance(schema.get("required"), list):
        shape += f" (required: {', '.join(str(name) for name in schema['required'])})"
    return shape


class RenderRenderer(Renderer):
    """The rendered messages."""

    def summary(self, view: View) -> str:
        return count(len(view.result or []), "message")

    def body(self, view: View) -> list[str]:
        return message_lines(view.result, view)


class CompileRenderer(Renderer):
    """The compiled interaction: its messages, then what the target must offer."""

    def summary(self, view: View) -> str:
        interaction = view.result or {}
        targets = ", ".join(interaction.get("target_capabilities") or []) or "no capabilities"
        return f"{count(len(interaction.get('messages') or []), 'message')} for {targets}"

    def body(self, view: View) -> list[str]:
        interaction: dict[str, Any] = view.result or {}
        required = interaction.get("required_capabilities") or []
        return [
            *message_lines(interaction.get("messages"), view),
            f"output schema: {_output_shape(interaction.get('output_schema'))}",
            f"required capabilities: {listing(required, view.style)}",
            f"runtime policy: {_policy(interaction.get('runtime_policy'))}",
            f"compiler: {interaction.get('compiler', '')}",
        ]


class ExecuteRenderer(Renderer):
    """The model's output, then the receipt and the stream."""

    def summary(self, view: View) -> str:
        receipt = view.result or {}
        if receipt.get("output_schema_valid"):
            return "output matches the contract's schema"
        return "output received"

    def body(self, view: View) -> list[str]:
        return [
            *self.output(view),
            *self.receipt(view),
            *self.usage(view),
            *self.streamed(view),
        ]

    def output(self, view: View) -> list[str]:
        """The output: text as it is, structured output as indented JSON; when it was just
        drawn on this terminal as it streamed, not again."""
        receipt = view.result or {}
        if view.answer_shown and view.data.get("stream_events"):
            return [
                f"{view.style.heading('output:')} {view.style.dim('shown above as it streamed')}"
            ]
        return [view.style.heading("output:"), *indented(json_lines(receipt.get("output")))]

    def receipt(self, view: View) -> list[str]:
        """Which runtime answered, and whether the output matched the schema."""
        receipt = view.result or {}
        adapter = receipt.get("adapter") or {}
        valid = receipt.get("output_schema_valid")
        return [
            f"runtime: {adapter.get('id', '')} {adapter.get('version', '')}".rstrip(),
            f"schema valid: {view.style.mark(bool(valid))} {'yes' if valid else 'no'}",
        ]

    def usage(self, view: View) -> list[str]:
        """What the call cost in tokens, when the runtime reported it."""
        usage = view.data.get("usage")
        if not isinstance(usage, dict):
            return []
        return [
            f"usage: {usage.get('prompt_tokens')} prompt + {usage.get('completion_tokens')} "
            f"completion = {usage.get('total_tokens')} tokens"
        ]

    def streamed(self, view: View) -> list[str]:
        """How many events were streamed (only for ``--stream``)."""
        events = view.data.get("stream_events") or []
        if not events:
            return []
        deltas = sum(1 for event in events if event.get("kind") == "Delta")
        return [f"streamed: {count(len(events), 'event')} ({count(deltas, 'delta')})"]


RENDERERS: dict[str, Renderer] = {
    "compile_contract": CompileRenderer(),
    "render_contract": RenderRenderer(),
    "execute_contract": ExecuteRenderer(),
}
