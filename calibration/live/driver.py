"""The rollout driver's own per-request work, timed on its own as a microbenchmark before the
live runs, and the `rollout.request_overhead` it gives the derived scenario.

The live rollout process is one thread: between (and, for a finish's callback, inside) its
engine's iterations it hands a finished turn's command to an environment worker, takes the
worker's answer (the pipe, the observation tokenized, the next turn's context built and
submitted), and under async sends each finished sample to a reward worker and takes its
score. The engine waits for all of it, as a serving engine waits for its own per-request CPU
work (vLLM's request intake and output processing, SGLang's scheduler). The engine's
profile prices iterations of an engine running alone (`engine_trace`), so none of this is in
it. This benchmark runs the same code on the same machinery (the job's `EnvWorkers` and
`RewardWorkers` processes, its tokenizer, engine and sample records) on the caller's core
(call it on the rollout core; the workers go to the helper cores, as in the job) and times
each operation's caller side only; a worker's own time is not the driver's. Nothing here
reads a live run.

`DriverCosts.request_overhead_s` turns the medians into seconds per request event (each
request admitted and each finished, what rlsim's engine counts) for a workload: every turn
is one request (two events); each environment step costs a finish's hand-off to a worker
plus the take of its answer, which submits the next turn; each sample's first turn costs a
submit; under async each sample's last finish also costs a reward job's submit and take.
The per-iteration polls of idle workers are not per request and are left out.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import wait
from pathlib import Path

import torch

from calibration.live.cores import Placement, pinned
from calibration.live.engine import Engine, GenRequest
from calibration.live.envpool import EnvWorkers
from calibration.live.model import TinyLM
from calibration.live.reward import RewardWorkers
from calibration.live.rollout import Sample, Turn
from calibration.live.runner import LiveConfig
from calibration.live.tasks import draw_batch
from calibration.live.tokenizer import BOS, EOS, Tokenizer

REPEATS = 200
WARMUP = 20  # untimed rounds first: imports, allocator, the workers' first jobs


@dataclass(frozen=True)
class DriverCosts:
    """Median caller-side seconds of each of the driver's per-request operations."""

    submit_s: float  # a first turn: its request built and submitted to the engine
    finish_s: float  # a finished turn taken in: its tokens decoded and recorded
    env_submit_s: float  # a finished turn's command handed to an environment worker
    env_take_s: float  # a step's answer taken: poll, observation, next turn submitted
    reward_submit_s: float  # a finished sample handed to a reward worker (async)
    reward_take_s: float  # its score taken (async)

    def request_overhead_s(self, samples: int, env_steps: int, async_mode: bool) -> float:
        """Seconds per request event for a workload of `samples` trajectories with
        `env_steps` environment steps in all (samples + env_steps requests, each admitted
        and finished once)."""
        requests = samples + env_steps
        if requests <= 0:
            return 0.0
        work = (samples * self.submit_s + requests * self.finish_s
                + env_steps * (self.env_submit_s + self.env_take_s))
        if async_mode:
            work += samples * (self.reward_submit_s + self.reward_take_s)
        return work / (2 * requests)

    def as_json(self) -> dict[str, float]:
        return asdict(self)


def measure_driver_costs(cfg: LiveConfig, place: Placement | None,
                         repeats: int | None = None) -> DriverCosts:
    """Time the driver's operations `repeats` times each (default REPEATS) with the live
    job's workers; call on the rollout core."""
    repeats = REPEATS if repeats is None else repeats
    torch.set_num_threads(cfg.threads)
    tok = Tokenizer()
    engine = Engine(TinyLM(cfg.lm), cfg.max_running, cfg.max_len)
    problems = [p for p in draw_batch(cfg.seed, 0, 64, cfg.mix) if p.multi_turn] or \
        draw_batch(cfg.seed, 0, 1, cfg.mix)
    root = Path(tempfile.mkdtemp(prefix="rlsim-driver-"))
    helpers = place.helpers if place else None
    idle = place.helpers_idle if place else False
    with pinned(helpers):  # the workers inherit the helper cores at spawn
        envs = EnvWorkers(cfg.env_workers, root, idle)
        rewards = RewardWorkers(cfg.reward_workers, idle=idle)
    times: dict[str, list[float]] = {k: [] for k in (
        "submit", "finish", "env_submit", "env_take", "reward_submit", "reward_take")}
    clock = time.perf_counter
    try:
        for k in range(WARMUP + repeats):
            p = problems[k % len(problems)]
            prompt = [BOS, *tok.encode(p.prompt)]
            sample = Sample(0, prompt)
            # A first turn submitted.
            t0 = clock()
            context, _ = sample.ids_and_mask()
            engine.submit(GenRequest(k, context, min(cfg.max_response_len,
                                                     cfg.max_len - len(context))))
            t1 = clock()
            engine.waiting.clear()
            # It finishes with a command: taken in, the command handed to a worker.
            name = next(iter(p.files), "a")
            output = [*tok.encode(f"$cat {name}"), EOS]
            t2 = clock()
            sample.turns.append(Turn(list(output)))
            text = tok.decode(output)
            t3 = clock()
            envs.submit(k, k, p.files, text)
            t4 = clock()
            wait(envs.busy_connections(), 10)  # the worker's time is not the driver's
            t5 = clock()
            got = envs.poll()
            for _, obs, _ in got:
                sample.turns[-1].obs = tok.encode(obs)
                context, _ = sample.ids_and_mask()
                engine.submit(GenRequest(k, context, min(cfg.max_response_len,
                                                         cfg.max_len - len(context))))
            t6 = clock()
            engine.waiting.clear()
            if len(got) != 1:
                raise RuntimeError("the driver benchmark's environment step did not answer")
            # The sample's last turn scored (async).
            t7 = clock()
            rewards.submit(k, p.answer, p.answer)
            t8 = clock()
            wait(rewards.busy_connections(), 10)
            t9 = clock()
            scored = rewards.poll()
            t10 = clock()
            if len(scored) != 1:
                raise RuntimeError("the driver benchmark's reward job did not answer")
            if k >= WARMUP:
                for key, dt in (("submit", t1 - t0), ("finish", t3 - t2),
                                ("env_submit", t4 - t3), ("env_take", t6 - t5),
                                ("reward_submit", t8 - t7), ("reward_take", t10 - t9)):
                    times[key].append(dt)
    finally:
        envs.close()
        rewards.close()
        shutil.rmtree(root, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    return DriverCosts(med["submit"], med["finish"], med["env_submit"], med["env_take"],
                       med["reward_submit"], med["reward_take"])
