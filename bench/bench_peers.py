"""Decision cost: one scheduler `step` against LiteLLM's router choosing a deployment, in the
same run.

A decision runs once per CLI call; the figure is context for row 1 of docs/performance.md,
with a target of at most `bench_decision.TARGET_RATIO` of LiteLLM's decision. This measures the
comparison in the same run as the other figures, so the performance page does not quote a
number measured elsewhere. It needs LiteLLM, which is in no extra of ours (it is large, and
only this page uses it): `pip install 'litellm==1.110.*'`. Without it the row says so and
nothing else changes.

What is compared, both in CPU time, interleaved round by round:
- autodev: one `step` (with its event's construction) over the recorded trace of benchmark 1
  (8 participants, 3-entry chains, about one call in four limited);
- LiteLLM: one synchronous `Router.get_available_deployment` for a request, on a router holding
  the same team as 8 model groups of 3 deployments (a participant's chain), with a third of the
  deployments cooling down after a 429 — LiteLLM's counterpart of a recorded limit. The request
  cycles through the 8 groups. No request is sent: the deployments point at a closed loopback
  port, and LiteLLM is told to use its bundled model cost map instead of fetching one.

The figure is the median over rounds of (seconds per step) / (LiteLLM's seconds per decision);
`steps_per_decision` is its inverse per round (how many steps one LiteLLM decision costs).

    python bench/bench_peers.py [--rounds N]
"""

from __future__ import annotations

import os
import statistics
import warnings
from collections.abc import Callable
from typing import Any

import bench_decision
from common import rounds_args

#: The LiteLLM release issue 13 measured.
LITELLM_SERIES = "1.110"
#: A closed loopback port: nothing is ever sent there (the router only chooses).
NOWHERE = "http://127.0.0.1:9"


def litellm_version() -> str | None:
    """LiteLLM's version if it can be imported, else None."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("litellm")
    except PackageNotFoundError:
        return None


def _router() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from litellm import Router

    model_list = []
    for member in bench_decision.TEAM:
        chain = (member.primary, *member.failover)
        for position, engine in enumerate(chain):
            model_list.append({
                "model_name": member.id,
                "litellm_params": {"model": f"openai/{engine.provider}-{engine.model or 'default'}",
                                   "api_key": "not-a-key", "api_base": NOWHERE},
                "model_info": {"id": f"{member.id}-{position}"},
            })
    router = Router(model_list=model_list, num_retries=0)
    cooldowns = router.health().cooldowns
    for index, deployment in enumerate(model_list):
        if index % 3 == 1:  # a third of the deployments limited, never a whole group
            cooldowns.add_deployment_to_cooldown(
                deployment["model_info"]["id"], Exception("429: rate limit reached"), 429, 3600.0)
    return router


def litellm_cost(decisions: int) -> Callable[[], float]:
    router = _router()
    groups = [member.id for member in bench_decision.TEAM]
    cooled = {f"{member.id}-1" for member in bench_decision.TEAM}
    for group in groups:  # the cooldowns are honoured: a cooled deployment is never chosen
        for _ in range(20):
            chosen = router.get_available_deployment(model=group, request_kwargs={})
            assert chosen["model_info"]["id"] not in cooled, chosen["model_info"]["id"]

    def run() -> float:
        began = bench_decision.cpu_time()
        for index in range(decisions):
            router.get_available_deployment(model=groups[index % 8], request_kwargs={})
        return (bench_decision.cpu_time() - began) / decisions

    return run


def measure(rounds: int, trace_events: int = 4_000, decisions: int = 400) -> dict[str, Any] | None:
    version = litellm_version()
    if version is None:
        return None
    trace = bench_decision.record_trace(trace_events)
    step_s, litellm_s = bench_decision.timed_rounds(
        [bench_decision.step_cost(trace), litellm_cost(decisions)], rounds)
    return {
        "version": version,
        "steps": len(trace),
        "ratio": bench_decision.median_ratio(step_s, litellm_s),
        "steps_per_decision": bench_decision.median_ratio(litellm_s, step_s),
        "step_us": statistics.median(step_s) * 1e6,
        "litellm_us": statistics.median(litellm_s) * 1e6,
        "rounds": rounds,
        "decisions": decisions,
    }


def main(argv: list[str] | None = None) -> int:
    args = rounds_args(argv, __doc__.split("\n\n")[0], 9)
    m = measure(args.rounds)
    if m is None:
        print(f"LiteLLM is not installed: pip install 'litellm=={LITELLM_SERIES}.*'")
        return 1
    print(f"LiteLLM {m['version']} routing decision: {m['litellm_us']:.1f} us; "
          f"step: {m['step_us']:.1f} us; step / decision = {m['ratio']:.3f} "
          f"(target <= {bench_decision.TARGET_RATIO}; median of {m['rounds']} rounds)")
    return 0 if m["ratio"] <= bench_decision.TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
