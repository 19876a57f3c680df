"""`tail_batching`: RollPacker's short and long rounds (REFERENCES.md, RollPacker).

Synchronous RL waits for the slowest response of every step. Tail batching confines the
long tail to a few long rounds so that most rounds are short:

- A **short round** launches ceil(eta_p P0) fresh prompts x ceil(eta_r R0) responses. A
  prompt is done when its first R0 responses finish; its other responses are aborted at
  once (the engine frees their KV). When P0 prompts are done, every other request is
  aborted and the prompts that were not done join the long-prompt queue.
- Once the queue holds at least P0 prompts, the next step is a **long round**: the P0
  oldest queued prompts, R0 responses each, no over-provisioning; it waits for all of them.
- Every step trains exactly P0 x R0 samples, all on-policy (staleness 0).

Choices the paper leaves open, documented in docs/design.md: a queued prompt restarts from
scratch in its long round (its partial responses are discarded) and its R0 responses have
the lengths the workload drew for its first R0 responses; prompts done at the very instant
the P0-th prompt is done are queued too, so that exactly P0 train; the phases after
generation are those of `sync` (colocated or disaggregated). Each round records a
`decision` instant on the controller track with the prompt ids it trained and queued.
With eta_p = eta_r = 1 a short round is exactly a `sync` step.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator, Sequence
from typing import Any

import simpy

from rlsim.config.errors import ScenarioError
from rlsim.entities.engine import Request
from rlsim.policies.phases import Phases, Sample
from rlsim.trace import CONTROLLER
from rlsim.workload import PromptGroup, Workload


def run_tail_batching(ph: Phases, workload: Workload) -> Generator[simpy.Event, Any, None]:
    sc = ph.c.scenario
    p0, r0 = sc.workload.prompts_per_step, sc.workload.samples_per_prompt
    cfg = sc.policy.tail_batching
    n_prompts, n_responses = math.ceil(cfg.eta_p * p0), math.ceil(cfg.eta_r * r0)
    most = workload.max_samples_per_prompt
    if most is not None and n_responses > most:
        raise ScenarioError(
            "policy.tail_batching.eta_r", f"a short round needs ceil(eta_r x {r0}) = "
            f"{n_responses} responses per prompt but the trace records {most}; lower eta_r to "
            f"at most {most / r0:g} or use a synthetic workload (workload.response_len)")
    colocated = ph.c.placement.colocated
    queue: deque[PromptGroup] = deque()
    draws = 0  # short rounds so far: each takes a fresh batch of prompts from the workload
    for step in range(sc.steps):
        t0 = ph.env.now
        if len(queue) >= p0:
            groups = [queue.popleft() for _ in range(p0)]
            ph.rec.instant(CONTROLLER, "decision", t0, step=step, what="long_round",
                           queue=len(queue), trained=[g.prompt_id for g in groups],
                           queued=[])
            samples = yield ph.gen(step, groups, version=step)
            kind = "long"
        else:
            fresh = workload.batch(draws, n_prompts, n_responses)
            draws += 1
            _single_turn(fresh)
            samples, left = yield ph.phase(
                "gen", step, _short_round(ph, step, fresh, p0, r0, step),
                samples=p0 * r0, launched=n_prompts * n_responses)
            queue.extend(PromptGroup(g.prompt_id, g.prompt_tokens, g.response_tokens[:r0],
                                     g.max_response_tokens) for g in left)
            ph.rec.instant(CONTROLLER, "decision", ph.env.now, step=step, what="short_round",
                           queue=len(queue), trained=sorted({s.prompt_id for s in samples}),
                           queued=[g.prompt_id for g in left])
            kind = "short"
        if colocated:
            yield ph.switch(step, "train")
        yield ph.reward(step, samples)
        yield ph.ref(step, samples)
        yield ph.train(step, samples, version=step)
        if colocated:
            yield ph.switch(step, "rollout")
        yield ph.weight_sync(step)
        ph.step_span(step, t0, samples=len(samples), round=kind, queue=len(queue))


def _single_turn(groups: Sequence[PromptGroup]) -> None:
    if any(g.turns is not None for g in groups):
        raise ScenarioError("policy.name", "tail_batching runs single-turn responses; "
                            "recorded multi-turn rollouts need policy.name: sync or one_off")


def _short_round(ph: Phases, step: int, groups: Sequence[PromptGroup], p0: int, r0: int,
                 version: int,
                 ) -> Generator[simpy.Event, Any, tuple[list[Sample], list[PromptGroup]]]:
    """Generate until P0 prompts have R0 finished responses each; returns their samples
    (in finishing order) and the prompts left unfinished (in launch order)."""
    env = ph.env
    t0 = env.now
    enough = env.event()
    by_prompt: dict[int, list[Request]] = {}
    finished: dict[int, list[tuple[Request, float]]] = {}
    done: list[int] = []
    reqs: list[Request] = []
    for g in groups:
        mine = by_prompt.setdefault(g.prompt_id, [])
        for out in g.response_tokens:
            req = Request(ph.next_rid(), g.prompt_tokens, out, tag=g.prompt_id)
            mine.append(req)
            reqs.append(req)

    def abort(targets: Sequence[Request]) -> None:
        live: dict[str, list[Request]] = {}
        for r in targets:
            if r.status in ("waiting", "prefill", "decode"):
                live.setdefault(r.engine, []).append(r)
        for engine in ph.c.engines:
            if engine.name in live:
                engine.abort(live[engine.name])

    def on_done(req: Request) -> None:
        if req.status != "finished" or enough.triggered:
            return  # an aborted response, or one that finished after the round ended
        got = finished.setdefault(req.tag, [])
        got.append((req, env.now))
        if len(got) != r0:
            return  # not yet done, or a surplus response landing as the prompt got done
        done.append(req.tag)
        if len(done) == p0:
            enough.succeed()
            abort(reqs)
        else:
            abort(by_prompt[req.tag])  # the prompt's surplus responses free their KV now

    for engine, chunk in ph.engine_chunks(reqs):
        for req in chunk:
            req.on_done = on_done
            engine.submit(req)
    yield enough
    pairs = [pair for pid in done for pair in finished[pid][:r0]]
    pairs.sort(key=lambda p: p[1])
    samples = [Sample(r.tag, r.prompt_tokens, r.generated, version) for r, _ in pairs]
    ph.record_responses(step, t0, samples, [t for _, t in pairs])
    trained = set(done)
    return samples, [g for g in groups if g.prompt_id not in trained]
