"""The generation side of the live job: rollouts of a step on one engine, with multi-turn
environment steps overlapping the engine's iterations.

`Generator` lives in the rollout process: it owns the engine and a pool of environment
worker processes (sandboxes run apart from the engine, as on a real cluster: a command
spawned from the engine's own process would take its interpreter lock and its core).
`generate()` submits every sample's first turn; when a turn ends with a `$cat` command (and
turns remain), the command runs on an environment worker while the engine keeps decoding
the other sequences, and the next turn (prompt + everything so far, re-prefilled: no prefix
cache) is submitted at the next iteration boundary. What each sample did (turn lengths,
environment seconds) is returned for the trainer and for the simulator's replay.

`Streamer` is the async mode's persistent generator (the semantics of
`rlsim.policies.asynchronous`): one engine that takes new batches while it generates others,
scores every sample on the reward workers as it finishes, hands the trainer the oldest
complete groups within the staleness bound, and at a weight update aborts every request in
flight and resumes it on the new weights with prompt + partial output (re-prefilled).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import cast

import torch

from calibration.live.cores import pinned
from calibration.live.engine import Engine, GenRequest
from calibration.live.envpool import EnvWorkers
from calibration.live.model import TinyLM
from calibration.live.reward import RewardWorkers
from calibration.live.tasks import Problem
from calibration.live.tokenizer import BOS, EOS, Tokenizer


@dataclass
class Turn:
    response: list[int]
    env_s: float = 0.0
    obs: list[int] = field(default_factory=list)


@dataclass
class Sample:
    """One trajectory: the prompt index, its turns and the final response text."""

    prompt_index: int
    prompt: list[int]
    turns: list[Turn] = field(default_factory=list)
    final_text: str = ""

    def ids_and_mask(self) -> tuple[list[int], list[int]]:
        ids, mask = list(self.prompt), [0] * len(self.prompt)
        for t in self.turns:
            ids += t.response + t.obs
            mask += [1] * len(t.response) + [0] * len(t.obs)
        return ids, mask


class Generator:
    def __init__(self, model: TinyLM, tok: Tokenizer, max_running: int, max_len: int,
                 max_response_len: int, max_turns: int, env_workers: int,
                 helper_cores: frozenset[int] | None = None, helpers_idle: bool = False
                 ) -> None:
        """`helper_cores`, `helpers_idle`: where and at which priority the environment (and
        reward) workers run (`cores.Placement`)."""
        self.model = model
        self.tok = tok
        self.max_running = max_running
        self.max_len = max_len
        self.max_response_len = max_response_len
        self.max_turns = max_turns
        self.root = Path(tempfile.mkdtemp(prefix="rlsim-live-"))
        self.helper_cores, self.helpers_idle = helper_cores, helpers_idle
        with pinned(helper_cores):  # the workers inherit the cores at spawn
            self.envs = EnvWorkers(env_workers, self.root, helpers_idle)
        self.iterations = 0
        self.step_s = 0.0  # seconds inside engine iterations, over every generate()
        self.wait_s = 0.0  # seconds the engine sat idle waiting for environment steps
        self.trace: list[tuple[int, int, tuple[int, ...], float]] | None = None
        # One engine for the process's life, its KV cache allocated once, as a serving
        # engine's is at start: a fresh cache per step cost ~6 ms of zeroing and page faults
        # inside every timed generation, which no serving engine pays.
        self.engine = Engine(model, max_running, max_len)

    def warm_up(self, requests: int = 96, seed: int = 12345) -> None:
        """A synthetic generation before any timed one, as serving engines warm up at start
        (vLLM's profiling run): the allocator, the BLAS library, the KV cache's pages and
        the caches meet the batch shapes once, so the first timed step does not pay for it."""
        rng = torch.Generator().manual_seed(seed)
        engine = self.engine
        saved = engine.generator, engine.stop_on_eos, engine.iterations
        engine.generator, engine.stop_on_eos = rng, False
        vocab = self.model.cfg.vocab
        for k in range(requests):
            n = int(torch.randint(4, 25, (1,), generator=rng))
            prompt = torch.randint(3, vocab, (n,), generator=rng).tolist()
            engine.submit(GenRequest(k, prompt, max_new=int(torch.randint(1, 24, (1,),
                                                                             generator=rng))))
        engine.run()
        engine.generator, engine.stop_on_eos, engine.iterations = saved

    def close(self) -> None:
        self.envs.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def generate(self, problems: list[Problem], samples_per_prompt: int,
                 seed: int) -> list[Sample]:
        engine = self.engine
        engine.generator = torch.Generator().manual_seed(seed)
        iterations0 = engine.iterations
        out: list[Sample] = []
        active = 0
        next_rid = 0

        def submit(k: int, context: list[int]) -> None:
            nonlocal next_rid
            room = self.max_len - len(context)
            engine.submit(GenRequest(next_rid, context, min(self.max_response_len, room),
                                     on_done=finished, tag=k))
            next_rid += 1

        def finished(req: GenRequest) -> None:
            nonlocal active
            k = req.tag
            assert isinstance(k, int)
            s = out[k]
            s.turns.append(Turn(list(req.output)))
            text = self.tok.decode(req.output)
            p = problems[s.prompt_index]
            tool_call = (p.multi_turn and text.startswith("$") and req.output[-1] == EOS
                         and len(s.turns) < self.max_turns)
            if tool_call:
                self.envs.submit(k, seed * 100_000 + k, p.files, text)
            else:
                s.final_text = text
                active -= 1

        for i, p in enumerate(problems):
            prompt = [BOS, *self.tok.encode(p.prompt)]
            for _ in range(samples_per_prompt):
                out.append(Sample(i, prompt))
                active += 1
                submit(len(out) - 1, prompt)
        while active:
            if engine.idle:
                if not self.envs.pending:
                    raise RuntimeError("rollout stalled: samples active, nothing running")
                t0 = time.perf_counter()
                results = self.envs.poll(timeout=60)
                self.wait_s += time.perf_counter() - t0
            else:
                results = self.envs.poll()
            for k, obs, env_s in results:
                s = out[k]
                s.turns[-1].env_s = env_s
                s.turns[-1].obs = self.tok.encode(obs)
                context, _ = s.ids_and_mask()
                if len(context) >= self.max_len:  # no room for another turn
                    s.final_text = ""
                    active -= 1
                else:
                    submit(k, context)
            if not engine.idle:
                if self.trace is not None:  # (decodes, KV tokens, prompt lengths, seconds)
                    nd = len(engine.running)
                    kv = sum(r.context for r in engine.running)
                    lens = tuple(len(r.prompt) for r in
                                 list(engine.waiting)[: engine.max_running - nd])
                t0 = time.perf_counter()
                engine.step()
                dt = time.perf_counter() - t0
                self.step_s += dt
                if self.trace is not None:
                    self.trace.append((nd, kv, lens, dt))
        self.iterations += engine.iterations - iterations0
        return out


@dataclass(eq=False)
class _Slot:
    """One sample of an async batch and its current attempt."""

    batch: int
    group: int  # prompt index in its batch
    problem: Problem
    prompt: list[int]
    sample: Sample
    version: int = 0  # the weights its current attempt started with
    attempt: int = 0  # bumped by every (re)start: late results of older attempts are dropped
    traj: int = 0  # sandbox directory of the current attempt
    partial: list[int] = field(default_factory=list)  # the turn's tokens before an abort
    turn_max: int = 0  # the current turn's token limit
    reward: float = 0.0
    reward_s: float = 0.0  # the reward worker's seconds
    done: bool = False  # scored in its current attempt


@dataclass
class ScoredGroup:
    """A complete group handed to the trainer: its samples, rewards and their versions."""

    batch: int
    group: int
    samples: list[Sample]
    rewards: list[float]
    versions: list[int]


class Streamer(Generator):
    """The async rollout side: `launch()` batches, `take()` a step's groups, `sync()` new
    weights, and between those `iterate()` the engine and `poll()` the workers.

    Batch d's samples are each their own request on one persistent engine (FCFS), started at
    the weights version the engine holds (`version`). A multi-turn sample's environment
    steps run on the environment workers; a finished sample goes to the reward workers at
    once; a group is complete when all its samples are scored, and complete groups queue in
    the order they complete. `take(n)` hands the trainer the oldest complete groups whose
    samples all started at version >= n - alpha; a group with an older sample is dropped
    and all its samples start over on the current weights. Staleness is also checked when a
    turn is submitted (as rlsim does): an attempt older than version - alpha starts over.
    """

    def __init__(self, model: TinyLM, tok: Tokenizer, max_running: int, max_len: int,
                 max_response_len: int, max_turns: int, env_workers: int,
                 reward_workers: int, prompts_per_step: int, samples_per_prompt: int,
                 alpha: int, seed: int, helper_cores: frozenset[int] | None = None,
                 helpers_idle: bool = False) -> None:
        super().__init__(model, tok, max_running, max_len, max_response_len, max_turns,
                         env_workers, helper_cores, helpers_idle)
        with pinned(helper_cores):
            self.rewards = RewardWorkers(reward_workers, idle=helpers_idle)
        self.engine.generator = torch.Generator().manual_seed(seed)
        self.p0, self.r0, self.alpha = prompts_per_step, samples_per_prompt, alpha
        self.version = 0
        self.batches: dict[int, list[_Slot]] = {}
        self.scored: dict[tuple[int, int], int] = {}  # (batch, group) -> samples scored
        self.ready: deque[tuple[int, int]] = deque()  # complete groups, oldest first
        self.take_step: int | None = None
        self.taking: list[tuple[int, int]] = []
        self.attempts = 0
        self.resumed = 0  # requests resumed on new weights
        self.stale = 0  # attempts dropped for staleness
        self._rid = 0
        self._traj = 0

    def close(self) -> None:
        self.rewards.close()
        super().close()

    # ------------------------------------------------------------------ producer
    def launch(self, batch: int, problems: list[Problem]) -> None:
        slots = []
        for i, p in enumerate(problems):
            prompt = [BOS, *self.tok.encode(p.prompt)]
            self.scored[(batch, i)] = 0
            slots += [_Slot(batch, i, p, prompt, Sample(i, prompt)) for _ in range(self.r0)]
        self.batches[batch] = slots
        for s in slots:
            self._start(s)

    def _start(self, s: _Slot) -> None:
        """A fresh attempt on the current weights (a new sandbox: the environment reset)."""
        self.attempts += 1
        self._traj += 1
        s.attempt += 1
        s.version, s.traj, s.done, s.partial = self.version, self._traj, False, []
        s.sample = Sample(s.group, s.prompt)
        self._turn(s)

    def _turn(self, s: _Slot) -> None:
        """Submit the current turn (after an abort, with its partial output)."""
        if s.version < self.version - self.alpha:
            self.stale += 1
            self._start(s)
            return
        context, _ = s.sample.ids_and_mask()
        if not s.partial:
            s.turn_max = min(self.max_response_len, self.max_len - len(context))
        self._rid += 1
        self.engine.submit(GenRequest(self._rid, context + s.partial, s.turn_max - len(s.partial),
                                      on_done=self._finished, tag=(s, s.attempt)))

    def _finished(self, req: GenRequest) -> None:
        s, attempt = _tag(req)
        if attempt != s.attempt:
            return
        response = s.partial + req.output
        s.partial = []
        s.sample.turns.append(Turn(response))
        text = self.tok.decode(response)
        p = s.problem
        if (p.multi_turn and text.startswith("$") and response[-1] == EOS
                and len(s.sample.turns) < self.max_turns):
            self.envs.submit((s, attempt), s.traj, p.files, text)
        else:
            self._score(s, text)

    def _score(self, s: _Slot, text: str) -> None:
        s.sample.final_text = text
        self.rewards.submit((s, s.attempt), s.problem.answer, text)

    def poll(self) -> None:
        """Take in finished environment steps and rewards (never waits)."""
        for (s, attempt), obs, env_s in self.envs.poll():
            if attempt != s.attempt:
                continue
            s.sample.turns[-1].env_s = env_s
            s.sample.turns[-1].obs = self.tok.encode(obs)
            if len(s.sample.ids_and_mask()[0]) >= self.max_len:  # no room for another turn
                self._score(s, "")
            else:
                self._turn(s)
        for (s, attempt), reward, secs in self.rewards.poll():
            if attempt != s.attempt:
                continue
            s.reward, s.reward_s, s.done = reward, secs, True
            key = (s.batch, s.group)
            self.scored[key] += 1
            if self.scored[key] == self.r0:
                self.ready.append(key)

    # ------------------------------------------------------------------ trainer side
    def take(self, step: int) -> None:
        """Start gathering step `step`'s groups; `taken()` says when they are there."""
        self.take_step, self.taking = step, []

    def taken(self) -> list[ScoredGroup] | None:
        if self.take_step is None:
            return None
        floor = self.take_step - self.alpha
        while self.ready and len(self.taking) < self.p0:
            key = self.ready.popleft()
            slots = self._group(key)
            if all(s.version >= floor for s in slots):
                self.taking.append(key)
                continue
            self.stale += len(slots)  # the whole group again, on the current weights
            self.scored[key] = 0
            for s in slots:
                self._start(s)
        if len(self.taking) < self.p0:
            return None
        out = []
        for b, g in self.taking:
            slots = self._group((b, g))
            out.append(ScoredGroup(b, g, [s.sample for s in slots], [s.reward for s in slots],
                                   [s.version for s in slots]))
        self.take_step, self.taking = None, []
        return out

    def _group(self, key: tuple[int, int]) -> list[_Slot]:
        b, g = key
        return self.batches[b][g * self.r0:(g + 1) * self.r0]

    def sync(self, version: int) -> None:
        """The new weights are loaded: every request in flight resumes on them."""
        self.version = version
        for req in self.engine.abort():
            s, attempt = _tag(req)
            if attempt != s.attempt:
                continue
            s.partial = s.partial + req.output
            if s.version >= version - self.alpha:
                self.resumed += 1
            self._turn(s)

    # ------------------------------------------------------------------ running
    @property
    def busy(self) -> bool:
        """Anything in flight: engine requests, environment steps or rewards."""
        return not self.engine.idle or bool(self.envs.pending) or bool(self.rewards.pending)

    def connections(self) -> list[Connection]:
        """What to wait on when the engine is idle."""
        return self.envs.busy_connections() + self.rewards.busy_connections()

    def iterate(self) -> None:
        """One engine iteration, traced as (decodes, KV tokens, prompt lengths, seconds)."""
        engine = self.engine
        nd = len(engine.running)
        kv = sum(r.context for r in engine.running)
        lens = tuple(len(r.prompt) for r in list(engine.waiting)[: engine.max_running - nd])
        t0 = time.perf_counter()
        engine.step()
        dt = time.perf_counter() - t0
        self.step_s += dt
        self.iterations += 1
        if self.trace is not None:
            self.trace.append((nd, kv, lens, dt))

    def all_done(self) -> bool:
        return all(s.done for slots in self.batches.values() for s in slots)

    def records(self) -> list[tuple[list[Sample], list[float]]]:
        """Per launched batch: its samples (their last attempts) and reward seconds."""
        return [([s.sample for s in slots], [s.reward_s for s in slots])
                for _, slots in sorted(self.batches.items())]


def _tag(req: GenRequest) -> tuple[_Slot, int]:
    """The slot and attempt a Streamer request belongs to."""
    return cast(tuple[_Slot, int], req.tag)


def now() -> float:
    """Seconds on the monotonic clock every process of the job shares (CLOCK_MONOTONIC)."""
    return time.perf_counter()
