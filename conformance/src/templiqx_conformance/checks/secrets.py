"""``secrets.not_exposed``: no credential ever leaves the adapter (DECISIONS 10).

The secrets are those the target declares (``AdapterTarget(secrets=[...])``) and, when the
factory accepts ``api_key``, the kit's marker credential it was handed. Every probe is run
through ``execute`` and ``execute_streaming``, and every failure the rig can drive (the
author's cases; over a wire also HTTP errors whose provider text echoes the credentials the
request carried, as real providers do, and mid-stream failures) through both again; no secret
may appear in an event, a receipt, the raised error's text, detail, help or failure value, or
any exception it chains.
"""

from __future__ import annotations

from templiqx_conformance.checks.context import CheckContext, NotApplicableError, fail_if
from templiqx_conformance.checks.failures import driving_probe
from templiqx_conformance.checks.verdicts import exposed_texts, leak_problems
from templiqx_conformance.rig.calls import run_execute, run_streaming

__all__ = ["secrets_not_exposed"]


def secrets_not_exposed(ctx: CheckContext) -> None:
    secrets = ctx.rig.secrets()
    if not secrets:
        raise NotApplicableError(
            "no secret to look for: declare the adapter's credentials "
            "(AdapterTarget(secrets=[...]) or the templiqx_secrets fixture), or let the factory "
            "accept an api_key keyword argument to receive the kit's marker credential"
        )
    problems: list[str] = []
    for probe in ctx.probes():
        ctx.rig.serve(probe)
        executed = run_execute(ctx.new_adapter(), ctx.request(probe), ctx.timeout)
        texts = exposed_texts(executed.error, (), executed.result)
        problems.extend(leak_problems(f"execute({probe.name})", secrets, texts))
        streamed = ctx.stream(probe)
        texts = exposed_texts(streamed.error, streamed.events, streamed.result)
        problems.extend(leak_problems(f"execute_streaming({probe.name})", secrets, texts))
    request = ctx.request(driving_probe(ctx))
    for case in ctx.rig.failures():
        if case.capability is not None and case.capability not in ctx.descriptor().capabilities:
            continue
        sent = case.prepare(request) if case.prepare is not None else request
        for mode in case.modes:
            if case.arrange is not None:
                case.arrange(sent)
            adapter = ctx.require_adapter(case.make_adapter(), f"failure case {case.label!r}")
            if mode == "execute":
                outcome = run_execute(adapter, sent, ctx.timeout)
            else:
                outcome = run_streaming(adapter, sent, ctx.timeout)
            texts = exposed_texts(outcome.error, outcome.events, outcome.result)
            problems.extend(leak_problems(f"{case.label} via {mode}", secrets, texts))
    fail_if(
        "no credential may appear in an event, receipt, error message, detail or diagnostic "
        "help — even when the provider's own error text repeats it",
        problems,
    )
