"""Responses in the Messages API's exact shape, written by hand, with what each must give.

The kit replays each one whole, one byte per write and cut at every event boundary (each cut
must fail). A recording gives the output (and the deltas) it means, or the failure it must
produce (the refusal). Replace or extend them with responses recorded from the real API.
"""

from __future__ import annotations

from pathlib import Path

from templiqx_conformance import Recording
from templiqx_contracts import Delta, ToolCallDelta
from templiqx_ports import RuntimeFailureCode

HERE = Path(__file__).resolve().parent / "recordings"

RECORDINGS = [
    Recording(
        name="text-stream",
        capability="text",
        stream=(HERE / "text-stream.sse").read_bytes(),
        output="Hello, conformance kit.\nSecond line ✓",
        deltas=[
            Delta(text="Hello"),
            Delta(text=", conformance kit."),
            Delta(text="\nSecond line ✓"),
        ],
    ),
    Recording(
        name="structured-output-as-a-forced-tool-call",
        capability="structured_output",
        stream=(HERE / "structured-stream.sse").read_bytes(),
        whole=(HERE / "structured-whole.json").read_bytes(),
        output={"ok": True, "note": "recorded ✓"},
        deltas=[
            Delta(text='{"ok": tr'),
            Delta(text='ue, "note": "recor'),
            Delta(text='ded ✓"}'),
        ],
    ),
    Recording(
        name="text-then-two-tool-calls",
        capability="tool_calling",
        stream=(HERE / "tool-calls-stream.sse").read_bytes(),
        whole=(HERE / "tool-calls-whole.json").read_bytes(),
        output={
            "tool_calls": [
                {
                    "id": "toolu_01Weather",
                    "name": "get_weather",
                    "arguments": {"city": "Paris", "units": "c"},
                },
                {
                    "id": "toolu_01Stock",
                    "name": "get_stock_price",
                    "arguments": {"ticker": "AAPL", "exchange": "NASDAQ"},
                },
            ]
        },
        deltas=[
            Delta(text="Let me"),
            Delta(text=" check both."),
            ToolCallDelta(name="get_weather", arguments_fragment='{"city": "Par'),
            ToolCallDelta(name="get_weather", arguments_fragment='is", "units"'),
            ToolCallDelta(name="get_weather", arguments_fragment=': "c"}'),
            ToolCallDelta(name="get_stock_price", arguments_fragment='{"ticker": "AAPL"'),
            ToolCallDelta(name="get_stock_price", arguments_fragment=', "exchange": "NASDAQ"}'),
        ],
    ),
    Recording(
        name="refusal",
        capability="text",
        stream=(HERE / "refusal-stream.sse").read_bytes(),
        whole=(HERE / "refusal-whole.json").read_bytes(),
        failure=RuntimeFailureCode.PERMANENT.value,
    ),
]
