"""The live RL job: a controller/trainer process and a rollout process, in `sync`,
`one_off` or `async` order, recording its phases as rlsim records.

Processes (spawned, one torch thread each by default: each is one "device" of the job):
- the controller (this process) holds the trainer, the reward worker pool and the clock;
- the rollout process holds the generator (`rollout.Generator`) and receives the weights
  through a shared-memory buffer.
With `LiveConfig.pin` (the default) each role runs on its own core (`cores.placement`): the
controller on the trainer's core for the run (restored after), the rollout process on the
engine's, the environment and reward workers on the helpers' (`LiveResult.cores` records
what the OS allowed each).
Phases, with rlsim's names, recorded as spans on the `controller` track:
`gen` (the rollout process's own start/end times), `reward`, `ref` (old log-probs, a no-grad
forward), `train` (one GRPO step), `weight_sync` (trainer -> shared buffer -> engine), and
one `step` span per training step, exactly as `rlsim.policies.sync` / `one_off` order them:
sync: gen -> reward -> ref -> train -> weight_sync; one_off: step k trains on the rollouts
generated (with weights k-1) while the rollout process already generates step k+1.

async (alpha = `LiveConfig.alpha`, 1 by default), as `rlsim.policies.asynchronous` runs it:
batch d is launched once the engine holds weights of version >= d - alpha (batches 0..alpha
at once, batch n + alpha + 1 right after step n publishes version n + 1, up to batch
steps + alpha - 1); the rollout process (`rollout.Streamer`) generates continuously, scores
each sample on its own reward workers as it finishes and queues complete groups in the
order they complete. Step n waits for the oldest steps' worth of complete groups whose
samples all started at version >= n - alpha (the wait is the step's `gen` span; there is no
`reward` span: rewards run during generation), computes old log-probs (`ref`), trains, and
publishes version n + 1 (`weight_sync`: the rollout process loads it at its next iteration
boundary, aborts every request in flight and resumes it with prompt + partial output).
After the last step the rollout process finishes every launched batch, untimed, so the
recorded rollouts cover every batch the simulator launches.

Both processes freeze their heap after their warm-up (`frozen_heap`), as vLLM's engine does
after start-up (`vllm.utils.gc_utils.freeze_gc_heap`): the cyclic collector then scans only
what the job allocates. Without it a full collection of the imported heap (torch, this
package, and in the controller everything `rlsim validate` loaded before) stalled one of a
run's steps by 0.1-0.2 s, once or twice a run and at random, in every mode.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

import torch

from calibration.live.cores import Placement, can_pin, pinned, placement
from calibration.live.grpo import Trainer, Trajectory, advantages, pack, packed_logprobs
from calibration.live.model import LMConfig, TinyLM, flat_params
from calibration.live.reward import RewardPool
from calibration.live.rollout import Generator, Sample, Streamer, now
from calibration.live.tasks import Problem, TaskMix, draw_batch
from calibration.live.tokenizer import Tokenizer
from rlsim.trace import CONTROLLER, Recorder

MODES = ("sync", "one_off", "async")


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
    alpha: int = 1  # async only: a sample trains at version n if it started at >= n - alpha
    pin: bool = True  # each role on its own core (`cores.placement`) where the OS allows
    lm: LMConfig = field(default_factory=lambda: LMConfig(vocab=Tokenizer().vocab_size))
    mix: TaskMix = field(default_factory=TaskMix)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        for name in ("steps", "prompts_per_step", "samples_per_prompt", "max_running",
                     "reward_workers", "env_workers", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.alpha < 0:
            raise ValueError("alpha must be >= 0")


@dataclass
class StepStats:
    step: int
    reward_mean: float
    response_tokens_mean: float
    samples: int
    multi_turn: int
    staleness: int  # the largest, over the step's samples: step - version it started at
    staleness_mean: float = 0.0
    dropped_stale: int = 0  # async: attempts dropped for staleness during the step
    resumed: int = 0  # async: requests resumed on the weights the step published


@dataclass
class LiveResult:
    config: LiveConfig
    recorder: Recorder
    rollouts: list[list[Sample]]  # per generated step (async: per launched batch)
    problems: list[list[Problem]]
    reward_s: list[list[float]]  # per trained step (async: launched batch), per sample
    stats: list[StepStats]
    # async: the (batch, group) pairs each step trained, in the order they completed
    trained: list[list[tuple[int, int]]] = field(default_factory=list)
    gen_iterations: int = 0
    # Every engine iteration of the timed steps: (decodes, KV tokens, prompt lengths of the
    # prefills, seconds). For the report's check of the iteration cost model only.
    iterations: list[tuple[int, int, tuple[int, ...], float]] = field(default_factory=list)
    # Role -> the cores its processes may run on, as the OS reports them after pinning
    cores: dict[str, list[int]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out = {"config": asdict(self.config), "stats": [asdict(s) for s in self.stats],
               "gen_iterations": self.gen_iterations, "cores": self.cores,
               "iterations": [[d, kv, list(lens), dt] for d, kv, lens, dt in self.iterations]}
        if self.trained:
            out["trained"] = self.trained
        return out


# ---------------------------------------------------------------------- rollout process
def _rollout_model(cfg: LiveConfig, flat: torch.Tensor) -> tuple[TinyLM, Callable[[], None]]:
    """The rollout process's policy copy, loaded from the shared weights buffer, and the
    function that reloads it (a weight sync)."""
    torch.set_num_threads(cfg.threads)
    model = TinyLM(cfg.lm)
    model.requires_grad_(False)
    params = flat_params(model)
    views = _views(flat, params)

    def load() -> None:
        for p, v in zip(params, views, strict=True):
            p.copy_(v)

    load()
    return model, load


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Collect once, then move every object alive into the collector's permanent generation
    for the block (`gc.freeze`), so no collection inside it scans them; unfrozen after,
    unless the caller had frozen objects of its own."""
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.collect()
        gc.freeze()
    try:
        yield
    finally:
        if freeze:
            gc.unfreeze()


def _rollout_main(cfg: LiveConfig, conn: Connection, flat: torch.Tensor,
                  place: Placement | None) -> None:
    model, load = _rollout_model(cfg, flat)
    gen = Generator(model, Tokenizer(), cfg.max_running, cfg.max_len, cfg.max_response_len,
                    cfg.max_turns, cfg.env_workers,
                    helper_cores=place.helpers if place else None,
                    helpers_idle=place.helpers_idle if place else False)
    gen.warm_up()
    gen.trace = []
    with frozen_heap():
        _serve_sync(cfg, conn, gen, load)


def _serve_sync(cfg: LiveConfig, conn: Connection, gen: Generator,
                load: Callable[[], None]) -> None:
    """The sync and one_off rollout process's loop: generate or load weights on request."""
    conn.send(("ready", now(), _cores(gen.envs.pids())))
    try:
        while True:
            msg = conn.recv()
            if msg[0] == "generate":
                _, step, problems = msg
                busy0, wait0 = gen.step_s, gen.wait_s
                t0 = now()
                samples = gen.generate(problems, cfg.samples_per_prompt,
                                       seed=cfg.seed * 1000 + step)
                conn.send(("rollouts", step, samples, t0, now(), gen.iterations, gen.trace,
                           gen.step_s - busy0, gen.wait_s - wait0))
                gen.trace = []
            elif msg[0] == "sync":
                load()
                conn.send(("synced", now()))
            else:
                break
    finally:
        gen.close()


def _rollout_async_main(cfg: LiveConfig, conn: Connection, flat: torch.Tensor,
                        place: Placement | None) -> None:
    """The async rollout process: one `Streamer` serving the controller's messages at its
    engine's iteration boundaries."""
    model, load = _rollout_model(cfg, flat)
    st = Streamer(model, Tokenizer(), cfg.max_running, cfg.max_len, cfg.max_response_len,
                  cfg.max_turns, cfg.env_workers, cfg.reward_workers, cfg.prompts_per_step,
                  cfg.samples_per_prompt, cfg.alpha, seed=cfg.seed * 1000 + 999,
                  helper_cores=place.helpers if place else None,
                  helpers_idle=place.helpers_idle if place else False)
    st.warm_up()
    st.trace = []
    with frozen_heap():
        _serve_async(conn, st, load)


def _serve_async(conn: Connection, st: Streamer, load: Callable[[], None]) -> None:
    """The async rollout process's loop: generate continuously, serve the controller's
    messages at the engine's iteration boundaries."""
    conn.send(("ready", now(), _cores(st.envs.pids() + st.rewards.pids())))
    drain: tuple[int, int] | None = None  # (engine iterations, traced ones) when asked
    try:
        while True:
            if st.engine.idle:  # nothing to compute: sleep until a message or a result
                wait([conn, *st.connections()], timeout=1.0)
            while conn.poll():
                msg = conn.recv()
                if msg[0] == "launch":
                    st.launch(msg[1], msg[2])
                elif msg[0] == "take":
                    st.take(msg[1])
                elif msg[0] == "sync":
                    load()
                    st.sync(msg[1])
                    conn.send(("synced", now(), st.resumed, st.stale))
                elif msg[0] == "drain":
                    assert st.trace is not None
                    drain = (st.iterations, len(st.trace))
                else:
                    return
            st.poll()
            groups = st.taken()
            if groups is not None:
                conn.send(("batch", groups, st.resumed, st.stale))
            if drain is not None and not st.busy:
                if not st.all_done():
                    raise RuntimeError("rollout stalled: samples unfinished, nothing running")
                assert st.trace is not None
                conn.send(("drained", st.records(), drain[0], st.trace[:drain[1]]))
                drain = None
            if not st.engine.idle:
                st.iterate()
    finally:
        st.close()


def _cores(helper_pids: list[int]) -> dict[str, list[int]]:
    """The cores the rollout process and its helper processes may run on (as the OS has
    them: what pinning did, for the record)."""
    if not can_pin():
        return {}
    helpers: set[int] = set()
    idle = []
    for pid in helper_pids:
        with contextlib.suppress(OSError):
            helpers |= os.sched_getaffinity(pid)
            idle.append(int(os.sched_getscheduler(pid) == getattr(os, "SCHED_IDLE", -1)))
    return {"rollout": sorted(os.sched_getaffinity(0)), "rollout_helpers": sorted(helpers),
            "rollout_helpers_idle": idle}


def _views(flat: torch.Tensor, params: list[torch.Tensor]) -> list[torch.Tensor]:
    out, at = [], 0
    for p in params:
        out.append(flat[at:at + p.numel()].view_as(p))
        at += p.numel()
    return out


# ---------------------------------------------------------------------- controller
class _Job:
    def __init__(self, cfg: LiveConfig, init_state: dict[str, torch.Tensor],
                 progress: Callable[[str], None] | None, place: Placement | None) -> None:
        self.cfg = cfg
        self.progress = progress
        self.place = place  # this process is the trainer, already on its core
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
        main = _rollout_async_main if cfg.mode == "async" else _rollout_main
        self.proc = ctx.Process(target=main, args=(cfg, child, self.flat, self.place))
        with pinned(self.place.rollout if self.place else None):  # inherited at spawn
            self.proc.start()
        cores = self._expect("ready")[2]
        # async scores in the rollout process, each sample as it finishes
        self.rewards = None
        if cfg.mode != "async":
            with pinned(self.place.helpers if self.place else None):
                self.rewards = RewardPool(cfg.reward_workers,
                                          self.place.helpers_idle if self.place else False)
        self.rec = Recorder()
        self.tok = Tokenizer()
        self.result = LiveResult(cfg, self.rec, [], [], [], [])
        if can_pin():
            cores["trainer"] = sorted(os.sched_getaffinity(0))
            if self.rewards is not None:
                cores["reward_pool"] = sorted(set().union(
                    *(os.sched_getaffinity(pid) for pid in self.rewards.pids())))
        self.result.cores = cores
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
        if self.rewards is not None:
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
        _, got, samples, t0, t1, iters, trace, busy_s, wait_s = self._expect("rollouts")
        assert got == step
        self.result.rollouts.append(samples)
        self.result.gen_iterations = iters
        self.result.iterations += trace
        # Where the span went: engine iterations, the engine idle waiting for environment
        # steps, and the rest (between iterations: polling workers, admitting turns).
        self.span("gen", step, t0, t1, samples=len(samples), iterations_s=busy_s,
                  env_wait_s=wait_s)
        return samples

    def train_side(self, step: int, samples: list[Sample], version: int) -> None:
        problems = self.result.problems[step]
        assert self.rewards is not None
        t0 = now()
        scored = self.rewards.score([(problems[s.prompt_index].answer, s.final_text)
                                     for s in samples])
        t1 = now()
        self.span("reward", step, t0, t1, samples=len(samples))
        rewards = [r for r, _ in scored]
        self.result.reward_s.append([sec for _, sec in scored])
        self.learn(step, samples, rewards, [version] * len(samples), t1)

    def learn(self, step: int, samples: list[Sample], rewards: list[float],
              versions: list[int], t1: float) -> None:
        """`ref` (from t1) and `train` over scored samples, groups of samples_per_prompt in
        a row; `versions`: the weights each sample started with."""
        cfg = self.cfg
        trajs = []
        for s, a in zip(samples, advantages(rewards, cfg.samples_per_prompt), strict=True):
            ids, mask = s.ids_and_mask()
            trajs.append(Trajectory(ids, mask, advantage=a))
        tokens = sum(len(t.ids) for t in trajs)
        t_prep = now()
        self.trainer.old_logprobs(trajs)
        t2 = now()
        # prep_s: building the batch from the samples, before the forward pass
        self.span("ref", step, t1, t2, tokens=tokens, prep_s=t_prep - t1)
        self.trainer.update(trajs)
        t3 = now()
        stale = [step - v for v in versions]
        self.span("train", step, t2, t3, samples=len(trajs), tokens=tokens,
                  staleness_mean=sum(stale) / len(stale), staleness_max=max(stale))
        resp = [sum(len(t.response) for t in s.turns) for s in samples]
        self.result.stats.append(StepStats(
            step, sum(rewards) / len(rewards), sum(resp) / len(resp), len(samples),
            sum(1 for s in samples if len(s.turns) > 1), max(stale),
            sum(stale) / len(stale)))
        if self.progress:
            st = self.result.stats[-1]
            self.progress(f"{cfg.mode} step {step}: reward {st.reward_mean:.3f}, "
                          f"{st.response_tokens_mean:.1f} response tokens")

    def weight_sync(self, step: int) -> tuple[Any, ...]:
        t0 = now()
        self._publish()
        self.conn.send(("sync", step + 1))
        msg = self._expect("synced")
        self.span("weight_sync", step, t0, msg[1])
        return msg

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


    def run_async(self) -> None:
        cfg = self.cfg
        published, launched = 0, 0
        resumed, stale = 0, 0  # the rollout process's running counts

        def launch() -> int:
            d = launched
            while d < cfg.steps + cfg.alpha and d <= published + cfg.alpha:
                problems = draw_batch(cfg.seed, d, cfg.prompts_per_step, cfg.mix)
                self.result.problems.append(problems)
                self.conn.send(("launch", d, problems))
                d += 1
            return d

        launched = launch()
        for step in range(cfg.steps):
            t0 = now()
            self.conn.send(("take", step))
            groups = self._expect("batch")[1]
            t1 = now()
            samples = [s for g in groups for s in g.samples]
            self.span("gen", step, t0, t1, samples=len(samples), waiting=True)
            self.result.trained.append([(g.batch, g.group) for g in groups])
            self.learn(step, samples, [r for g in groups for r in g.rewards],
                       [v for g in groups for v in g.versions], t1)
            _, _, resumed_now, stale_now = self.weight_sync(step)
            published = step + 1
            launched = launch()
            st = self.result.stats[-1]
            st.dropped_stale, st.resumed = stale_now - stale, resumed_now - resumed
            resumed, stale = resumed_now, stale_now
            self.span("step", step, t0, now(), samples=len(samples),
                      dropped_stale=st.dropped_stale, resumed=st.resumed,
                      batches=sorted({g.batch for g in groups}))
        # Untimed: every launched batch to its end, for the recorded rollouts.
        self.conn.send(("drain",))
        _, records, iterations, trace = self._expect("drained")
        self.result.rollouts = [samples for samples, _ in records]
        self.result.reward_s = [secs for _, secs in records]
        self.result.gen_iterations = iterations
        self.result.iterations = trace


def run_live(cfg: LiveConfig, init_state: dict[str, torch.Tensor],
             progress: Callable[[str], None] | None = None) -> LiveResult:
    """Run the live job from the warm-up weights `init_state`; records in `result.recorder`."""
    t_start = time.perf_counter()
    place = placement() if cfg.pin else None
    # This process is the trainer: on the trainer's core for the run, restored after.
    with pinned(place.trainer if place else None):
        job = _Job(cfg, init_state, progress, place)
        try:
            with frozen_heap():
                if cfg.mode == "sync":
                    job.run_sync()
                elif cfg.mode == "one_off":
                    job.run_one_off()
                else:
                    job.run_async()
        finally:
            job.close()
    if progress:
        progress(f"{cfg.mode}: {cfg.steps} steps in {time.perf_counter() - t_start:.1f} s")
    return job.result
