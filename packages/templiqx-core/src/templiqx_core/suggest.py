"""Suggestions for a misspelt name ("did you mean …?"): the closest declared name.

A misspelling is usually one or two keystrokes away from what was meant (``mesages``, ``txt``,
``strng``); a different word (``nickname`` for ``name``) gets no suggestion, and the messages
that can list what is declared do so instead.
:func:`closest` measures the optimal string alignment distance (Levenshtein plus the swap of
two neighbours, as rustc and click do) and accepts a candidate only when it is at most a third
of the longer word away (at least one edit), so short words do not match everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from templiqx_contracts import quote_input

__all__ = ["backticks", "closest", "did_you_mean", "edit_distance", "name_list"]

_MAX_LISTED = 20
"""Most names :func:`name_list` spells out."""


def edit_distance(left: str, right: str, limit: int | None = None) -> int:
    """Insertions, deletions, substitutions and neighbour swaps that turn ``left`` into ``right``.

    With ``limit``, any distance above it may be reported as ``limit + 1`` (the words are
    compared no further once they are known to be too far apart).
    """
    if left == right:
        return 0
    if limit is not None and abs(len(left) - len(right)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(right) + 1))
    for i, char in enumerate(left, start=1):
        current = [i] + [0] * len(right)
        for j, other in enumerate(right, start=1):
            cost = 0 if char == other else 1
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char == right[j - 2] and left[i - 2] == other:
                best = min(best, before[j - 2] + 1)
            current[j] = best
        if limit is not None and min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate nearest to ``word`` if it is close enough to be a likely misspelling.

    Ties go to the first candidate in iteration order; ``word`` itself is never suggested.
    """
    best: str | None = None
    best_distance = 0
    for candidate in candidates:
        if candidate == word:
            continue
        limit = max(1, max(len(word), len(candidate)) // 3)
        if best is not None:
            limit = min(limit, best_distance - 1)
        if limit < 1 and best is not None:
            break
        distance = edit_distance(word, candidate, limit)
        if distance <= limit and (best is None or distance < best_distance):
            best, best_distance = candidate, distance
    return best


def backticks(name: str) -> str:
    """A name of the contract language (a field, a kind, a filter) as messages show it."""
    return f"`{name}`"


def did_you_mean(
    word: str, candidates: Iterable[str], quote: Callable[[str], str] = backticks
) -> str:
    """``"; did you mean `x`?"`` for the closest candidate, or ``""`` when none is close.

    ``quote`` shows the candidate: :func:`backticks` for the language's own names,
    :func:`templiqx_contracts.quote_input` for names the user declared.
    """
    match = closest(word, candidates)
    return "" if match is None else f"; did you mean {quote(match)}?"


def name_list(names: Iterable[str]) -> str:
    """Declared names for a message: ``'a', 'b'`` (each bounded by ``quote_input``, at most
    20, then how many more), or ``none``."""
    listed = list(names)
    if not listed:
        return "none"
    shown = ", ".join(quote_input(name) for name in listed[:_MAX_LISTED])
    if len(listed) > _MAX_LISTED:
        shown += f" and {len(listed) - _MAX_LISTED} more"
    return shown
