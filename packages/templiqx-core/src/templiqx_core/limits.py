"""Reliability limits of the strict YAML reader and of rendering.

Every document templiqx reads (contracts, manifests, locks, translation bundles, include
partials, render requests) passes through these bounds before and while it is parsed, so a
hostile or broken file costs bounded time and memory. Exceeding one is a ``TQX_PARSE_LIMIT``
diagnostic whose message names the limit. What rendering and compilation produce is bounded
too (:data:`MAX_RENDERED_BYTES`, :data:`MAX_COMPILED_BYTES`: ``TQX_RENDER_TOO_LARGE``).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ALIAS_EXPANSION_FACTOR",
    "MAX_COMPILED_BYTES",
    "MAX_DOCUMENT_BYTES",
    "MAX_EXPANDED_BYTES",
    "MAX_EXPANDED_NODES",
    "MAX_NESTING_DEPTH",
    "MAX_RENDERED_BYTES",
]

MAX_DOCUMENT_BYTES: Final = 8 * 1024 * 1024
"""Largest accepted source, in UTF-8 bytes (8 MiB). Larger input is refused before parsing."""

MAX_NESTING_DEPTH: Final = 128
"""Deepest accepted nesting of sequences and mappings (after alias expansion).

The reference reader stops at the same depth ("recursion limit exceeded")."""

ALIAS_EXPANSION_FACTOR: Final = 100
"""Alias budget: a document may expand at most this many aliases per YAML event it contains.

This is the reference reader's "repetition limit"; every alias occurrence in the fully
expanded document counts, including those inside an aliased node."""

MAX_EXPANDED_NODES: Final = 100_000
"""Most nodes (scalars, sequences, mappings) a document may hold once every alias is expanded.

It bounds the time and memory of reading, whatever the alias structure (``billion laughs``)
and however small the nodes: reading costs about five microseconds and a few hundred bytes a
node, so a document stays under a second and some tens of MiB (issue #29: an 8 KB contract
whose aliases expanded to 330,000 maps took 3.9 s and 171 MiB, a 3 MB flow list of a million
``{}`` 15 s, under the former limit of 1,000,000). The largest reference document holds 888."""

MAX_EXPANDED_BYTES: Final = 2 * MAX_DOCUMENT_BYTES
"""Most UTF-8 bytes of scalar text (keys and values) a document may hold once every alias is
expanded (16 MiB).

The node budgets count a scalar as one node whatever its length, so a 1 MB string aliased a
thousand times stays under them and still expands to a gigabyte once the document is
fingerprinted, cached or sent back. This budget counts each alias at the size of the text it
repeats, while reading, so such a document is refused before anything is encoded. A document
without aliases holds at most about its own size in scalar text, so it never reaches the budget
before :data:`MAX_DOCUMENT_BYTES`."""

MAX_RENDERED_BYTES: Final = 8 * 1024 * 1024
"""Most UTF-8 bytes of message text one render may produce, all messages together (8 MiB).

Counted while rendering, so a ``for_each`` that repeats an outer input for every element of a
long list (500 MB from 1 MB of arguments) stops at the limit instead of building the text."""

MAX_COMPILED_BYTES: Final = 16 * 1024 * 1024
"""Most bytes one compiled request may take as JSON (16 MiB): the rendered messages plus the
contract's output schema, runtime policy and extension values, which every runtime is sent."""
