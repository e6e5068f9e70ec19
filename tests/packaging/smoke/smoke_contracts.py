"""templiqx-contracts installed alone: canonical JSON, a fingerprint vector, stream events."""

from templiqx_contracts import (
    Delta,
    canonical_json,
    decode_stream_event,
    encode_stream_event,
    fingerprint,
)


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


check(canonical_json({"b": 2, "a": [1, 1.0, "é"]}) == '{"a":[1,1.0,"é"],"b":2}'.encode(), "bytes")
check(
    fingerprint({"b": 2, "a": 1})
    == "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777",
    "fingerprint vector",
)
check(encode_stream_event(Delta(text="Hi")) == b'{"kind":"Delta","text":"Hi"}', "event encoding")
check(decode_stream_event(b'{"kind":"Delta","text":"Hi"}') == Delta(text="Hi"), "event decoding")
print("ok")
