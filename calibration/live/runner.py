"""The live RL job: a controller/trainer process and a rollout process, in `sync` or
`one_off` order, recording its phases as rlsim records.

Processes (spawned, one torch thread each by default: each is one "device" of the job):
- the controller (this process) holds the trainer, the reward worker pool and the clock;
- the rollout process holds the generator (`rollout.Generator`) and receives the weights
  through a shared-memory buffer.
Phases, with rlsim's names, recorded as spans on the `controller` track:
`gen` (the rollout process's own start/end times), `reward`, `ref` (old log-probs, a no-grad
forward), `train` (one GRPO step), `weight_sync` (trainer -> shared buffer -> engine), and
one `step` span per training step, exactly as `rlsim.policies.sync` / `one_off` order them:
sync: gen -> reward -> ref -> train -> weight_sync; one_off: step k trains on the rollouts
generated (with weights k-1) while the rollout process already generates step k+1.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import torch

from calibration.live.grpo import Trainer, Trajectory, advantages, pack, packed_logprobs
from calibration.live.model import LMConfig, TinyLM, flat_params
from calibration.live.reward import RewardPool
from calibration.live.rollout import Generator, Sample, now
from calibration.live.tasks import Problem, TaskMix, draw_batch
from calibration.live.tokenizer import Tokenizer
from rlsim.trace import CONTROLLER, Recorder

MODES = ("sync", "one_off")


@dataclass(frozen=True)
class LiveConfig:
    """The live job's shape. Defaults are the full validation run."""

    mode: str = "sync"
    steps: int = 8
    prompts_per_step: int = 32
    samples_per_prompt: int = 4
    max_running: int = 32
    max_response_len: int = 40
    max_turns: int = 3
    max_len: int = 160
    reward_workers: int = 2
    env_workers: int = 4
    lr: float = 5e-4
    micro_batch_tokens: int = 4096
    threads: int = 1
    seed: int = 0
    lm: LMConfig = field(default_factory=lambda: LMConfig(vocab=Tokenizer().vocab_size))
    mix: TaskMix = field(default_factory=TaskMix)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        for name in ("steps", "prompts_per_step", "samples_per_prompt", "max_running",
                     "reward_workers", "env_workers", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")


@dataclass
class StepStats:
    step: int
    reward_mean: float
    response_tokens_mean: float
    samples: int
    multi_turn: int
    staleness: int


@dataclass
class LiveResult:
    config: LiveConfig
    recorder: Recorder
    rollouts: list[list[Sample]]  # per generated step
    problems: list[list[Problem]]
    reward_s: list[list[float]]  # per trained step, per sample: worker seconds
    stats: list[StepStats]
    gen_iterations: int = 0
    # Every engine iteration of the timed steps: (decodes, KV tokens, prompt lengths of the
    # prefills, seconds). For the report's check of the iteration cost model only.
    iterations: list[tuple[int, int, tuple[int, ...], float]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {"config": asdict(self.config), "stats": [asdict(s) for s in self.stats],
                "gen_iterations": self.gen_iterations}


# ---------------------------------------------------------------------- rollout process
def _rollout_main(cfg: LiveConfig, conn: Connection, flat: torch.Tensor) -> None:
    torch.set_num_threads(cfg.threads)
    model = TinyLM(cfg.lm)
    model.requires_grad_(False)
    params = flat_params(model)
    views = _views(flat, params)

    def load() -> None:
        for p, v in zip(params, views, strict=True):
            p.copy_(v)

    load()
    gen = Generator(model, Tokenizer(), cfg.max_running, cfg.max_len, cfg.max_response_len,
                    cfg.max_turns, cfg.env_workers)
    gen.warm_up()
    gen.trace = []
    conn.send(("ready", now()))
    try:
        while True:
            msg = conn.recv()
            if msg[0] == "generate":
                _, step, problems = msg
                t0 = now()
                samples = gen.generate(problems, cfg.samples_per_prompt,
                                       seed=cfg.seed * 1000 + step)
                conn.send(("rollouts", step, samples, t0, now(), gen.iterations, gen.trace))
                gen.trace = []
            elif msg[0] == "sync":
                load()
                conn.send(("synced", now()))
            else:
                break
    finally:
        gen.close()


def _views(flat: torch.Tensor, params: list[torch.Tensor]) -> list[torch.Tensor]:
    out, at = [], 0
    for p in params:
        out.append(flat[at:at + p.numel()].view_as(p))
        at += p.numel()
    return out


# ---------------------------------------------------------------------- controller
class _Job:
    def __init__(self, cfg: LiveConfig, init_state: dict[str, torch.Tensor],
                 progress: Callable[[str], None] | None) -> None:
        self.cfg = cfg
        self.progress = progress
        torch.set_num_threads(cfg.threads)
        self.model = TinyLM(cfg.lm)
        self.model.load_state_dict(init_state)
        self.trainer = Trainer(self.model, cfg.lr, cfg.micro_batch_tokens)
        self._warm_up_trainer()
        self.params = [p.data for p in flat_params(self.model)]
        self.flat = torch.zeros(sum(p.numel() for p in self.params)).share_memory_()
        self.views = _views(self.flat, self.params)
        self._publish()
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        # Not a daemon: the rollout process starts its own environment workers. close()
        # stops it (and kills it if it hangs).
        self.proc = ctx.Process(target=_rollout_main, args=(cfg, child, self.flat))
        self.proc.start()
        self._expect("ready")
        self.rewards = RewardPool(cfg.reward_workers)
        self.rec = Recorder()
        self.tok = Tokenizer()
        self.result = LiveResult(cfg, self.rec, [], [], [], [])
        self.t_origin = now()

    def _warm_up_trainer(self) -> None:
        """A forward and backward on a synthetic batch before any timed step (no optimizer
        step, gradients dropped), as the rollout side warms its engine up."""
        g = torch.Generator().manual_seed(54321)
        trajs = []
        for _ in range(2 * self.cfg.prompts_per_step):
            n = int(torch.randint(6, 40, (1,), generator=g))
            ids = torch.randint(3, self.cfg.lm.vocab, (n,), generator=g).tolist()
            trajs.append(Trajectory(ids, [0] * 4 + [1] * (n - 4), advantage=1.0))
        self.trainer.old_logprobs(trajs)
        with torch.enable_grad():
            for b in pack(trajs, self.cfg.micro_batch_tokens):
                packed_logprobs(self.model, b).sum().backward()
        self.model.zero_grad(set_to_none=True)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(("stop",))
        self.proc.join(timeout=30)
        if self.proc.is_alive():
            self.proc.kill()
        self.rewards.close()

    def _publish(self) -> None:
        for v, p in zip(self.views, self.params, strict=True):
            v.copy_(p)

    def _expect(self, kind: str) -> tuple[Any, ...]:
        waited = 0.0
        while not self.conn.poll(1.0):
            waited += 1.0
            if not self.proc.is_alive():
                raise RuntimeError(f"the rollout process died (exit code {self.proc.exitcode}) "
                                   f"before sending {kind!r}")
            if waited >= 600:
                raise RuntimeError(f"rollout process sent no {kind!r} within 600 s")
        msg: tuple[Any, ...] = self.conn.recv()
        if msg[0] != kind:
            raise RuntimeError(f"rollout process sent {msg[0]!r}, expected {kind!r}")
        return msg

    def _t(self, t: float) -> float:
        return t - self.t_origin

    def span(self, name: str, step: int, t0: float, t1: float, **attrs: Any) -> None:
        self.rec.span(CONTROLLER, name, self._t(t0), self._t(t1), step=step, **attrs)

    # -- phases
    def start_gen(self, step: int) -> None:
        problems = draw_batch(self.cfg.seed, step, self.cfg.prompts_per_step, self.cfg.mix)
        self.result.problems.append(problems)
        self.conn.send(("generate", step, problems))

    def finish_gen(self, step: int) -> list[Sample]:
        _, got, samples, t0, t1, iters, trace = self._expect("rollouts")
        assert got == step
        self.result.rollouts.append(samples)
        self.result.gen_iterations = iters
        self.result.iterations += trace
        self.span("gen", step, t0, t1, samples=len(samples))
        return samples

    def train_side(self, step: int, samples: list[Sample], version: int) -> None:
        cfg = self.cfg
        problems = self.result.problems[step]
        t0 = now()
        scored = self.rewards.score([(problems[s.prompt_index].answer, s.final_text)
                                     for s in samples])
        t1 = now()
        self.span("reward", step, t0, t1, samples=len(samples))
        rewards = [r for r, _ in scored]
        self.result.reward_s.append([sec for _, sec in scored])
        trajs = []
        for s, a in zip(samples, advantages(rewards, cfg.samples_per_prompt), strict=True):
            ids, mask = s.ids_and_mask()
            trajs.append(Trajectory(ids, mask, advantage=a))
        tokens = sum(len(t.ids) for t in trajs)
        self.trainer.old_logprobs(trajs)
        t2 = now()
        self.span("ref", step, t1, t2, tokens=tokens)
        self.trainer.update(trajs)
        t3 = now()
        self.span("train", step, t2, t3, samples=len(trajs), tokens=tokens,
                  staleness_mean=float(step - version), staleness_max=step - version)
        resp = [sum(len(t.response) for t in s.turns) for s in samples]
        self.result.stats.append(StepStats(
            step, sum(rewards) / len(rewards), sum(resp) / len(resp), len(samples),
            sum(1 for s in samples if len(s.turns) > 1), step - version))
        if self.progress:
            st = self.result.stats[-1]
            self.progress(f"{cfg.mode} step {step}: reward {st.reward_mean:.3f}, "
                          f"{st.response_tokens_mean:.1f} response tokens")

    def weight_sync(self, step: int) -> None:
        t0 = now()
        self._publish()
        self.conn.send(("sync", step + 1))
        _, t1 = self._expect("synced")
        self.span("weight_sync", step, t0, t1)

    # -- orders
    def run_sync(self) -> None:
        for step in range(self.cfg.steps):
            t0 = now()
            self.start_gen(step)
            samples = self.finish_gen(step)
            self.train_side(step, samples, version=step)
            self.weight_sync(step)
            self.span("step", step, t0, now(), samples=len(samples))

    def run_one_off(self) -> None:
        steps = self.cfg.steps
        self.start_gen(0)
        ready = self.finish_gen(0)
        for step in range(steps):
            t0 = now()
            if step + 1 < steps:
                self.start_gen(step + 1)  # generated with the weights of version `step`
            self.train_side(step, ready, version=max(step - 1, 0))
            if step + 1 < steps:
                ready = self.finish_gen(step + 1)
            self.weight_sync(step)
            self.span("step", step, t0, now())


def run_live(cfg: LiveConfig, init_state: dict[str, torch.Tensor],
             progress: Callable[[str], None] | None = None) -> LiveResult:
    """Run the live job from the warm-up weights `init_state`; records in `result.recorder`."""
    t_start = time.perf_counter()
    job = _Job(cfg, init_state, progress)
    try:
        if cfg.mode == "sync":
            job.run_sync()
        else:
            job.run_one_off()
    finally:
        job.close()
    if progress:
        progress(f"{cfg.mode}: {cfg.steps} steps in {time.perf_counter() - t_start:.1f} s")
    return job.result
