"""SSEDecoder: every line ending, every split, comments, fields, multi-line data, bounds."""

from __future__ import annotations

import pytest

from templiqx_runtime_openai import LineTooLongError, SSEDecoder


def decode_all(pieces: list[bytes], max_line: int = 1_048_576) -> list[bytes]:
    decoder = SSEDecoder(max_line)
    out: list[bytes] = []
    for piece in pieces:
        out.extend(decoder.feed(piece))
    return out


def every_split(data: bytes) -> list[list[bytes]]:
    """The body whole, split once at every boundary, and one byte per read."""
    splits = [[data], [bytes([b]) for b in data]]
    splits.extend([data[:i], data[i:]] for i in range(1, len(data)))
    return splits


STREAM = b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n'
EXPECTED = [b'{"a":1}', b'{"b":2}', b"[DONE]"]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_ending_at_every_split(ending: bytes) -> None:
    data = STREAM.replace(b"\n", ending)
    for pieces in every_split(data):
        assert decode_all(pieces) == EXPECTED, pieces


def test_crlf_split_across_reads_is_one_line_end() -> None:
    # The CR ends one read and the LF starts the next: still one line end, not two (which
    # would dispatch an empty line and split the event).
    data = b"data: x\r\ndata: y\r\n\r\n"
    index = data.index(b"\r\n") + 1
    assert decode_all([data[:index], data[index:]]) == [b"x\ny"]


def test_mixed_line_endings_in_one_stream() -> None:
    data = b"data: a\r\n\ndata: b\r\rdata: c\n\r\n"
    for pieces in every_split(data):
        assert decode_all(pieces) == [b"a", b"b", b"c"]


def test_comments_and_unknown_fields_are_ignored() -> None:
    data = (
        b": keep-alive\n"
        b"event: message\n"
        b"id: 7\n"
        b"retry: 1000\n"
        b"x-custom: whatever\n"
        b"data: payload\n"
        b":another comment\n"
        b"\n"
        b": ping\n\n"
    )
    for pieces in every_split(data):
        assert decode_all(pieces) == [b"payload"]


def test_multi_line_data_joins_with_newline() -> None:
    data = b'data: {"a":\ndata: 1}\n\n'
    for pieces in every_split(data):
        assert decode_all(pieces) == [b'{"a":\n1}']


def test_space_after_colon_is_optional_and_only_one_is_removed() -> None:
    assert decode_all([b"data:x\n\ndata:  y\n\n"]) == [b"x", b" y"]


def test_field_without_colon_is_an_empty_data_line() -> None:
    assert decode_all([b"data\ndata: z\n\n"]) == [b"\nz"]


def test_empty_data_is_not_dispatched() -> None:
    assert decode_all([b"data:\n\ndata: \n\n\n\n"]) == []


def test_blank_lines_without_data_dispatch_nothing() -> None:
    assert decode_all([b"\n\n\r\n\r\r"]) == []


def test_event_without_trailing_blank_line_is_never_dispatched() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: complete\n\ndata: cut") == [b"complete"]
    assert decoder.feed(b" off\n") == []
    assert decoder.buffered > 0


def test_leading_byte_order_mark_is_skipped_even_when_split() -> None:
    data = b"\xef\xbb\xbfdata: x\n\n"
    for pieces in every_split(data):
        assert decode_all(pieces) == [b"x"]


def test_utf8_is_never_split_inside_a_character() -> None:
    text = "Grüße, 世界 — 😀".encode()
    data = b'data: {"t":"' + text + b'"}\n\n'
    for pieces in every_split(data):
        (payload,) = decode_all(pieces)
        assert payload.decode("utf-8") == '{"t":"Grüße, 世界 — 😀"}'


def test_many_events_in_one_read() -> None:
    data = b"".join(b"data: %d\n\n" % i for i in range(1000))
    assert decode_all([data]) == [b"%d" % i for i in range(1000)]


def test_one_event_per_read_fast_path_matches_the_general_path() -> None:
    frames = [b"data: %d\n\n" % i for i in range(50)]
    assert decode_all(frames) == decode_all([b"".join(frames)])
    # The fast path must not swallow state: a split event after single-event reads.
    assert decode_all([*frames[:3], b"data: sp", b"lit\n\n"]) == [b"0", b"1", b"2", b"split"]


def test_line_longer_than_limit_fails_before_the_newline_arrives() -> None:
    decoder = SSEDecoder(max_line=100)
    decoder.feed(b"data: " + b"x" * 90)
    with pytest.raises(LineTooLongError) as caught:
        decoder.feed(b"x" * 20)
    assert caught.value.limit == 100


def test_line_longer_than_limit_inside_one_read() -> None:
    with pytest.raises(LineTooLongError):
        decode_all([b"data: " + b"y" * 200 + b"\n\n"], max_line=100)


def test_line_exactly_at_limit_is_accepted() -> None:
    line = b"data: " + b"z" * 94
    assert len(line) == 100
    assert decode_all([line + b"\n\n"], max_line=100) == [b"z" * 94]
    assert decode_all([line[:50], line[50:], b"\n\n"], max_line=100) == [b"z" * 94]


def test_endless_line_keeps_memory_bounded() -> None:
    decoder = SSEDecoder(max_line=1000)
    fed = 0
    while fed + 64 <= 1000:
        decoder.feed(b"q" * 64)
        fed += 64
        assert decoder.buffered == fed
    with pytest.raises(LineTooLongError):
        decoder.feed(b"q" * 64)
