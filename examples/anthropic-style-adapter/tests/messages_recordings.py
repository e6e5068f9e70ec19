"""Responses in the Messages API's exact shape, written by hand, with what each must give.

The kit replays each one whole, one byte per write and cut at every event boundary (each cut
must fail). Replace or extend them with responses recorded from the real API.
"""

from __future__ import annotations

from pathlib import Path

from templiqx_conformance import Recording
from templiqx_contracts import Delta

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
]
