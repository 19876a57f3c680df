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
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from calibration.live.engine import Engine, GenRequest
from calibration.live.envpool import EnvWorkers
from calibration.live.model import TinyLM
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
                 max_response_len: int, max_turns: int, env_workers: int) -> None:
        self.model = model
        self.tok = tok
        self.max_running = max_running
        self.max_len = max_len
        self.max_response_len = max_response_len
        self.max_turns = max_turns
        self.root = Path(tempfile.mkdtemp(prefix="rlsim-live-"))
        self.envs = EnvWorkers(env_workers, self.root)
        self.iterations = 0
        self.step_s = 0.0  # seconds inside engine iterations, over every generate()
        self.wait_s = 0.0  # seconds the engine sat idle waiting for environment steps
        self.trace: list[tuple[int, int, tuple[int, ...], float]] | None = None

    def warm_up(self, requests: int = 96, seed: int = 12345) -> None:
        """A synthetic generation before any timed one, as serving engines warm up at start
        (vLLM's profiling run): the allocator, the BLAS library and the caches meet the batch
        shapes once, so the first timed step does not pay for it."""
        rng = torch.Generator().manual_seed(seed)
        engine = Engine(self.model, self.max_running, self.max_len, generator=rng,
                        stop_on_eos=False)
        vocab = self.model.cfg.vocab
        for k in range(requests):
            n = int(torch.randint(4, 25, (1,), generator=rng))
            prompt = torch.randint(3, vocab, (n,), generator=rng).tolist()
            engine.submit(GenRequest(k, prompt, max_new=int(torch.randint(1, 24, (1,),
                                                                             generator=rng))))
        engine.run()

    def close(self) -> None:
        self.envs.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def generate(self, problems: list[Problem], samples_per_prompt: int,
                 seed: int) -> list[Sample]:
        engine = Engine(self.model, self.max_running, self.max_len,
                        generator=torch.Generator().manual_seed(seed))
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
        self.iterations += engine.iterations
        return out


def now() -> float:
    """Seconds on the monotonic clock every process of the job shares (CLOCK_MONOTONIC)."""
    return time.perf_counter()
