"""The three ways the kit says something went wrong, shared by every layer of the kit.

* :class:`TargetError` — what the author handed the kit cannot be used (a bad reference, an
  unknown transport, a malformed target). The command exits 1 for it.
* :class:`BrokenInvariantError` — a check found a broken rule; the message says which rule,
  what was seen and what to change.
* :class:`NotApplicableError` — a check has nothing to look at for this adapter (the port exempts
  it, or the kit could not exercise it); the message says why. Never reported as a pass.
"""

from __future__ import annotations

__all__ = ["BrokenInvariantError", "NotApplicableError", "TargetError"]


class TargetError(ValueError):
    """The target cannot be used: a bad reference, a missing object, an unknown transport."""


class BrokenInvariantError(Exception):
    """A check found a broken invariant; the message says which and what was observed."""


class NotApplicableError(Exception):
    """The check does not apply to this adapter (or could not be exercised); the message says
    why."""
