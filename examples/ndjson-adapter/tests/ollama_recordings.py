"""Answers in the Ollama API's exact shape (compact NDJSON), with what each must give.

The kit replays each one whole, one byte per write, and cut after every line before the last
(each cut must fail: only the ``"done": true`` line ends an answer). A recording gives the
output (and the deltas) it means, or the failure it must produce (the error line). Replace or
extend them with answers recorded from a real server.
"""

from __future__ import annotations

from pathlib import Path

from templiqx_conformance import Recording
from templiqx_contracts import Delta, ToolCallDelta
from templiqx_ports import RuntimeFailureCode

HERE = Path(__file__).resolve().parent / "recordings"

TEXT = ["Hello", ",", " conformance", " kit", ".\n", "Second", " line", " ✓"]
STRUCTURED = ['{"', "ok", '":', " true", ",", ' "', "note", '":', ' "', "recorded", " ✓", '"}']

RECORDINGS = [
    Recording(
        name="text-stream",
        capability="text",
        stream=(HERE / "text-stream.ndjson").read_bytes(),
        output="".join(TEXT),
        deltas=[Delta(text=piece) for piece in TEXT],
    ),
    Recording(
        name="structured-output-with-format",
        capability="structured_output",
        stream=(HERE / "structured-stream.ndjson").read_bytes(),
        whole=(HERE / "structured-whole.json").read_bytes(),
        output={"ok": True, "note": "recorded ✓"},
        deltas=[Delta(text=piece) for piece in STRUCTURED],
    ),
    Recording(
        name="two-whole-tool-calls",
        capability="tool_calling",
        stream=(HERE / "tool-calls-stream.ndjson").read_bytes(),
        output={
            "tool_calls": [
                {
                    "id": "call_0",
                    "name": "get_weather",
                    "arguments": {"city": "Paris", "units": "c"},
                },
                {
                    "id": "call_1",
                    "name": "get_stock_price",
                    "arguments": {"ticker": "AAPL", "exchange": "NASDAQ"},
                },
            ]
        },
        deltas=[
            ToolCallDelta(name="get_weather", arguments_fragment='{"city": "Paris", "units": "c"}'),
            ToolCallDelta(
                name="get_stock_price",
                arguments_fragment='{"ticker": "AAPL", "exchange": "NASDAQ"}',
            ),
        ],
    ),
    Recording(
        name="error-line-after-content",
        capability="text",
        stream=(HERE / "error-stream.ndjson").read_bytes(),
        failure=RuntimeFailureCode.UNAVAILABLE.value,
    ),
]
