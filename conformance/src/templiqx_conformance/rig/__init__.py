"""How the kit reaches an adapter: it makes adapters, calls them under observation, and arranges
what they produce.

* :mod:`~templiqx_conformance.rig.calls` — one adapter call on a worker thread with a deadline,
  every event recorded (:class:`Outcome`), late events caught;
* :mod:`~templiqx_conformance.rig.rig` — :class:`Rig`, :class:`FixtureRig` (outputs travel as
  ``fixture_output``) and the failures a rig can drive (:class:`DrivenFailure`);
* :mod:`~templiqx_conformance.rig.wire_rig` — :class:`WireRig`: the loopback server playing the
  model in a wire's framing.
"""

from templiqx_conformance.rig.calls import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.rig.rig import KIT_SECRET, DrivenFailure, FixtureRig, Rig
from templiqx_conformance.rig.wire_rig import WireRig

__all__ = [
    "KIT_SECRET",
    "DrivenFailure",
    "FixtureRig",
    "Outcome",
    "Rig",
    "WireRig",
    "describe_error",
    "run_execute",
    "run_streaming",
]
