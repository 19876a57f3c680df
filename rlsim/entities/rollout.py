"""A sample's life, from its launch to its one outcome: the entity every policy drives.

Owns one sample in flight (`Rollout`), single-turn or multi-turn, and what it needs:
- **attempts and epochs** (cancellation): a restart or cancel starts a new attempt, a job
  restart a new epoch (`RolloutJob.epoch`); a callback of an older attempt or epoch (a
  request that finishes, an environment step that ends) is ignored;
- **dispatch**: every turn runs on one engine, the one given at launch or the least-loaded
  one when the first turn is submitted;
- **turns**: turn i generates on the engine; unless it is the last, the environment step
  after it runs on the env pool (`EnvPool`) and appends its observation tokens; then turn
  i + 1 goes to the same engine with the whole context so far as its prompt. An
  environment reset, if any, comes before the first turn;
- **the context arithmetic**, in one place: the context is the prompt, every finished
  turn's response and every observation after it (`context_at`); an aborted turn resumes
  with what it generated, less its last token (`resume`); the sample's trajectory, last
  response and observation tokens;
- **the prefix-cache key** of its requests: one per attempt, so a restart on new weights
  never reuses the KV of the old one;
- **finishing**: after its last turn it becomes a `Sample`, handed to the policy's
  `on_finish` (scoring as it finishes, or a barrier);
- **fault hooks** (`FaultHooks`) a recovery scheme attaches: the time of each LLM call and
  the environment step after each turn (which may fail and `rewind` to a snapshot or the
  start); an engine crash keeps the request, and `requeue` brings it back. With hooks
  attached the finished context is checked whole;
- **exactly one outcome per attempt** (`end`: trained, stale, cancelled, aborted...),
  counted on the job; a second one raises. A job restart (`RolloutJob.restart`) voids
  every attempt still open: counted `voided` at once, their late outcomes ignored.
`RolloutJob` is what the samples of one job share: request ids, the epoch, the engines and
env pool, the fault hooks' factory, the counts of attempts and outcomes. Policies decide
when to launch, keep, stop or drop a sample; they never redo this arithmetic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import count
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final, Protocol

from librt.strings import BytesWriter, read_f64_le, read_i32_le, write_f64_le, write_i32_le
from mypy_extensions import i64, mypyc_attr, u8

from rlsim.entities.engine import DoneTarget, Request, RolloutEngine
from rlsim.entities.env import EnvPool
from rlsim.entities.timers import Timers, TimerTarget
from rlsim.workload import Turn
from rlsim.workload.groups import Turns

if TYPE_CHECKING:
    from rlsim.entities.cluster import Cluster

_LOAD = attrgetter("n_requests")  # RolloutEngine.load, as a count
LIVE = frozenset({"waiting", "prefill", "decode"})  # a request still on its engine
OPEN = "open"  # `Rollout.state` while an attempt runs
# Each rollout's number (`uid`). Its prefix-cache key (`Request.cache_key`) is a bare
# `object()` per attempt (`_submit`), equal only to itself:
# - not the rollout: an engine's cache keeps a finished context's key until it is evicted,
#   and a key holding the rollout kept every sample, its turns and its whole batch alive
#   as long (issue 24: 2.5 M turns by 20 steps of the 1,024-GPU async agentic benchmark);
# - not an int (`attempt << 40 | uid` until issue 40): an int is hashed from its digits, so
#   every lookup read the key's object, out of the CPU's caches at 1,024 GPUs at each
#   submit and finish; a bare object is hashed by its address, with no read;
# - not an instance of a class of ours: such an object is tracked by the garbage collector,
#   and so then is every cache holding one, each walked key by key at every collection
#   (issue 40: +7.6 misses a turn, where a dict of ints or bare objects is left out).
# Which keys are equal, and so every result, is the same either way: a dict's order is its
# insertion order, whatever the hashes.
_UIDS = count(1)
ADMIT_ALWAYS: Final = 1 << 62  # `JobCounts.admit_from` that calls every `admit` hook
# `Rollout._hooks`: which hooks are set, a bit each, so that a turn tests a byte in the
# rollout's first cache line rather than reading four pointers (issue 40).
_FAULTS: Final = 1
_AFTER_TURN: Final = 2
_AFTER_ENV: Final = 4
_ADMIT: Final = 8


def _with(bits: u8, bit: u8, on: bool) -> u8:
    """`bits` with `bit` set if `on`, else clear."""
    return bits | bit if on else bits & ~bit


# A multi-turn rollout's turns packed in one buffer (`Rollout._cols`), a row a turn: its
# response tokens and observation tokens (int32, little-endian), then its environment
# step's seconds (float64, the same float). At 1,024 GPUs ~17,000 trajectories are in
# flight, so a rollout's state is out of the CPU's caches at each of its turns; read from
# the `Turns` columns, a turn's three numbers cost ~5 misses (three tuples and an int or
# float object each), from the buffer about two (its header and its row), read natively
# (librt.strings, compiled by mypyc), with no number object made (issue 40).
_ROW: Final = 16  # `groups.TURN_ROW_BYTES`, a compiled constant here
_OBS_AT: Final = 4
_ENV_AT: Final = 8
_I32_END: Final = 2**31


def pack_turns(out: tuple[int, ...], obs: tuple[int, ...], env_s: tuple[float, ...]) -> bytes:
    """A sample's turn columns (`Turns`: of equal lengths) as `Rollout._cols` holds them
    (see `_ROW`). Indexed, not zipped: compiled, a tuple's item is read natively, where
    `zip` is Python's iterator and a tuple a row."""
    w = BytesWriter()
    for i in range(len(out)):
        n: int = out[i]
        o: int = obs[i]
        if not 0 <= n < _I32_END or not 0 <= o < _I32_END:
            raise ValueError(f"a turn of {n} response and {o} observation tokens: "
                             "token counts must lie in [0, 2**31)")
        write_i32_le(w, n)
        write_i32_le(w, o)
        write_f64_le(w, env_s[i])
    return w.getvalue()


@dataclass(slots=True, unsafe_hash=True)
class Sample:
    """A finished response ready for training. Treat it as immutable (it hashes by value);
    it is not frozen because a frozen dataclass costs five times as much to build, once
    per response."""

    prompt_id: int
    prompt_tokens: int
    response_tokens: int  # the whole trajectory after the prompt for a multi-turn sample
    version: int  # policy version (weights) it was generated with
    reward_s: float | None = None  # recorded reward latency (replayed rollouts), else drawn
    task: str | None = None  # its task in a mixed workload (workload.tasks)
    last_response_tokens: int | None = None  # multi-turn: its final turn; None: single-turn
    observation_tokens: int = 0  # multi-turn: its observations (within response_tokens)
    rollout: Rollout | None = field(default=None, compare=False, repr=False)
    """The life it came from (its outcome is ended there); None for a sample made by hand."""

    # Written out: under mypyc, dataclasses' generated __init__ runs interpreted (about a
    # third of a sample's cost to build); this one compiles. The same fields and defaults.
    def __init__(self, prompt_id: int, prompt_tokens: int, response_tokens: int, version: int,
                 reward_s: float | None = None, task: str | None = None,
                 last_response_tokens: int | None = None, observation_tokens: int = 0,
                 rollout: Rollout | None = None) -> None:
        self.prompt_id = prompt_id
        self.prompt_tokens = prompt_tokens
        self.response_tokens = response_tokens
        self.version = version
        self.reward_s = reward_s
        self.task = task
        self.last_response_tokens = last_response_tokens
        self.observation_tokens = observation_tokens
        self.rollout = rollout

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.response_tokens

    def judged_tokens(self, reads: str) -> int:
        """The tokens of it a judge reads (reward.judge.reads), before the judge's prompt."""
        if reads == "responses":
            return self.response_tokens - self.observation_tokens
        if reads == "last_response" and self.last_response_tokens is not None:
            return self.last_response_tokens
        return self.response_tokens


class FaultHooks(Protocol):
    """What a recovery scheme does at a multi-turn sample's fault points (one per sample)."""

    def turn_done(self, rollout: Rollout, llm_s: float) -> None:
        """A turn has finished `llm_s` after it was submitted (its context is updated)."""

    def env_step(self, rollout: Rollout) -> None:
        """Run the environment step after `rollout.turn`; when it has run, call
        `rollout.step_done()`, or, when it failed, `rollout.rewind(turn, delay_s)`."""


FaultHooksFactory = Callable[["Rollout", tuple[int, int]], FaultHooks]
"""Fault hooks for a rollout and its fault key (step, place in the batch)."""


class JobCounts:
    """The job's epoch and last request id, which every rollout reads and moves on at each
    turn: compiled, a field each (on the interpreted `RolloutJob` they were a dictionary
    lookup and store per read and write). `RolloutJob.epoch` and `.rid` are these. Also
    the job's env pool and clock, which a turn calls: here rather than in each rollout,
    whose fields a turn reads are fewer cache lines so (issue 40)."""

    def __init__(self, pool: EnvPool, timers: Timers) -> None:
        self.epoch: i64 = 0
        self.rid: i64 = 0
        self.pool = pool
        self.timers = timers
        # Attempts on weights of this version or newer are submitted without a call of
        # their `admit` hook: the policy that sets it vouches that its hook admits them
        # (the async policy's staleness check, an interpreted call a turn otherwise;
        # issue 40). The default calls every hook.
        self.admit_from = ADMIT_ALWAYS


# A plain Python class even when compiled (rlsim/compiled.py): its methods can be replaced
# on an instance (tests spy on end_samples). What a turn reads is in `JobCounts`.
@mypyc_attr(native_class=False)
class RolloutJob:
    """What the rollouts of one job share (its mutable state, apart from the phases)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.env = cluster.env
        self.env_pool = cluster.env_pool
        self.timers = Timers.of(self.env)  # the clock the rollouts read (`Timers.now`)
        self.counts = JobCounts(self.env_pool, self.timers)
        self.started = 0  # attempts started
        self.outcomes: Counter[str] = Counter()  # attempts by how they ended
        self.faults: FaultHooksFactory | None = None
        """Set by a recovery scheme: the fault hooks of each multi-turn sample."""

    # Read-only here (mypyc compiles no property setter on a plain class): moved on in
    # `counts`.
    @property
    def epoch(self) -> int:
        """Moves on at every job restart: the work of an older epoch is void."""
        return self.counts.epoch

    @property
    def rid(self) -> int:
        """The last request id given (judges' requests share the numbering)."""
        return self.counts.rid

    def next_rid(self) -> int:
        """A fresh request id (unique within the run)."""
        self.counts.rid += 1
        return self.counts.rid

    def restart(self) -> None:
        """A job restart: the epoch moves on, and every attempt still open is void, its
        outcome `voided` (counted now; an `end` of it later is ignored)."""
        self.counts.epoch += 1
        n = self.open_attempts()
        if n:
            self.outcomes["voided"] += n

    def attach_faults(self, rollout: Rollout, key: tuple[int, int]) -> None:
        """Give a multi-turn sample its fault hooks, if a recovery scheme set the factory;
        `key`: (step or batch, place in it), what its fault draws key on."""
        if self.faults is not None and rollout.last > 0:
            rollout.faults = self.faults(rollout, key)

    def live_engine(self) -> RolloutEngine:
        """The least-loaded engine that is not down (any, if all are)."""
        engines = [e for e in self.cluster.engines if not e.down] or self.cluster.engines
        return min(engines, key=_LOAD)

    def open_attempts(self) -> int:
        """Attempts started whose outcome is still open."""
        return self.started - sum(self.outcomes.values())

    def end_samples(self, samples: Iterable[Sample], how: str) -> None:
        """`Rollout.end(how)` for the attempt each sample came from (a batch of thousands
        at a time: one loop, no call per sample)."""
        n = 0
        epoch = self.epoch
        for s in samples:
            r = s.rollout
            if r is None or r.epoch != epoch:  # none, or voided by a job restart
                continue
            if r.state is not OPEN:
                r.end(how)  # raises: ended twice
            r.state = how
            n += 1
        if n:
            self.outcomes[how] += n


# Compiled (rlsim/compiled.py), the class still takes Python subclasses (a plug-in's; the
# async policy's `_Slot` is compiled too).
@mypyc_attr(allow_interpreted_subclasses=True)
class Rollout(TimerTarget):
    """One sample's life: its attempts, turns, context, requests and outcome.

    Single-turn: `turns` is None and the one turn generates `response_tokens`. Multi-turn:
    `turns` holds every turn (`response_tokens` is then the whole trajectory).
    `keyed`: its requests carry its prefix-cache key even with one turn (a multi-turn
    sample's always do), so that the finished context stays in the engine's cache.
    Hooks a policy may set: `on_finish(sample)` after the last turn; `admit(rollout)`
    before each submission (False: the policy took it over, e.g. restarted it), unless
    the job's `counts.admit_from` says it admits the attempt's weights;
    `after_turn(rollout)` / `after_env(rollout)` hold it after a turn or an environment
    step until the policy calls `env_step()` / `submit()` (lock-step interaction).
    """

    # Every field is a slot, the hooks and the flags too: compiled, a slot is read as a
    # field, where a class default not yet set is looked up through the type and the
    # instance's __dict__ at each turn (issue 40). The __dict__ takes what a recovery
    # scheme or a test adds.
    __slots__ = ("__dict__", "_admit", "_after_env", "_after_turn", "_cols", "_counts",
                 "_env_now", "_faults", "_hooks", "_key", "_multi", "_obs_now", "attempt",
                 "context", "engine", "epoch", "first_rid", "job", "keyed", "last", "on_finish",
                 "prompt_id", "prompt_tokens", "request", "reset_s", "response_tokens", "reward_s",
                 "rid", "slot", "state", "stopped", "t_turn", "task", "turn", "turns", "uid",
                 "version")

    # Compiled, the fields lie in memory in the order declared here, then in the order
    # `__init__` first sets the rest. At 1,024 GPUs a rollout is out of the CPU's caches at
    # each of its turns, ~17,000 trajectories being in flight (issue 40), and a turn reads
    # it twice: when its request finishes (`_turn_done`, `_env_step`) and when its
    # environment step has run (`on_timer`, `_step_done`, `_submit`). What those read lies
    # in the first 152 bytes, three cache lines (four when the object starts in the last
    # quarter of one; an async policy's `_Slot`, 320 bytes with the collector's header,
    # always starts at one's start). The flags first, in the padding after mypyc's bitmap of
    # set fields (`_multi`: it has turns; `_hooks`: which hooks are set, whose pointers come
    # later, read only when set); what a turn reads of the job is in `_counts`; `turns` and
    # `first_rid` (read at a first turn only) come later. Set by `start` (read only after
    # it): epoch; version, the weights of the current attempt; turn, the turn running or the
    # environment step after it; context; engine. By `_submit`: rid, of the last request;
    # t_turn, when it was submitted; _obs_now and _env_now, the submitted turn's observation
    # tokens and environment step, read from its row of `_cols` with its response tokens, so
    # that the turn's end reads them here rather than the row again.
    stopped: bool
    keyed: bool
    _multi: bool
    _hooks: u8
    request: Request | None
    epoch: i64
    _counts: JobCounts
    turn: int
    context: i64
    _obs_now: i64
    _env_now: float
    _cols: bytes
    attempt: i64
    rid: i64
    _key: object | None
    engine: RolloutEngine | None
    t_turn: float
    version: int
    last: i64
    _faults: FaultHooks | None
    _after_turn: Callable[[Rollout], None] | None
    _after_env: Callable[[Rollout], None] | None
    _admit: Callable[[Rollout], bool] | None
    turns: Turns | None
    first_rid: int
    job: RolloutJob
    uid: int
    response_tokens: int

    def __init__(self, job: RolloutJob, prompt_id: int, prompt_tokens: int,
                 response_tokens: int, turns: Sequence[Turn] | None = None,
                 slot: int = 0, reward_s: float | None = None, reset_s: float = 0.0,
                 task: str | None = None, keyed: bool = False,
                 on_finish: Callable[[Sample], None] | None = None, first_rid: int = 0) -> None:
        self.job = job
        self.prompt_id = prompt_id
        self.prompt_tokens = prompt_tokens
        self.response_tokens = response_tokens
        # A sample's turns as columns (`Turns`; a tuple of `Turn` is converted once), and
        # packed a row a turn (`_cols`), which is what a turn reads.
        cols = None if turns is None else Turns.of(turns)
        self.turns = cols
        self._multi = cols is not None
        if cols is None:
            self._cols = b""
            self.last = 0
        else:
            # packed by the workload while its arrays were in the caches, if it did (its
            # columns are then not read: `Turns.from_packed` makes them only when asked)
            packed: bytes | None = cols.packed
            if packed is None:
                packed = pack_turns(cols.response_tokens, cols.obs_tokens, cols.env_s)
            self._cols = packed
            self.last = len(packed) // _ROW - 1
        self._obs_now = 0
        self._env_now = 0.0
        last = self.last
        self.slot = slot  # its place in the batch that launched it
        self.reward_s = reward_s  # a recorded reward latency (replayed rollouts)
        self.reset_s = reset_s  # the environment reset before the first turn
        # Hooks a policy may set (see the class's docstring) and `stop`'s flag.
        self._hooks = 0
        self._admit = None
        self._after_turn = None
        self._after_env = None
        self.stopped = False
        # The job's counts, env pool and clock, held natively: read at every turn.
        self._counts = job.counts
        self.task = task
        self.keyed = keyed or last > 0
        self.uid = next(_UIDS)
        # The prefix-cache key of the current attempt (`_submit`): one object per attempt,
        # made at its first keyed turn; a new attempt (`start`, `cancel`) drops it.
        self._key = None
        self.on_finish = on_finish
        # A slot set here, not a class default: mypyc leaves a class default of a Protocol
        # type unset in a class with a __dict__ slot (the compiled hot path, rlsim/compiled.py).
        self._faults = None
        self.first_rid = first_rid
        """A request id reserved at launch for the first turn (0: numbered when submitted)."""
        self.attempt = 0
        self.state: str | None = None
        """None before its first attempt, OPEN while an attempt runs, then its outcome."""
        self.request = None  # the turn in flight

    # ------------------------------------------------------------------ hooks
    @property
    def faults(self) -> FaultHooks | None:
        """The fault hooks a recovery scheme attached, if any."""
        return self._faults

    @faults.setter
    def faults(self, hooks: FaultHooks | None) -> None:
        self._faults = hooks
        self._hooks = _with(self._hooks, _FAULTS, hooks is not None)

    @property
    def after_turn(self) -> Callable[[Rollout], None] | None:
        return self._after_turn

    @after_turn.setter
    def after_turn(self, hook: Callable[[Rollout], None] | None) -> None:
        self._after_turn = hook
        self._hooks = _with(self._hooks, _AFTER_TURN, hook is not None)

    @property
    def after_env(self) -> Callable[[Rollout], None] | None:
        return self._after_env

    @after_env.setter
    def after_env(self, hook: Callable[[Rollout], None] | None) -> None:
        self._after_env = hook
        self._hooks = _with(self._hooks, _AFTER_ENV, hook is not None)

    @property
    def admit(self) -> Callable[[Rollout], bool] | None:
        return self._admit

    @admit.setter
    def admit(self, hook: Callable[[Rollout], bool] | None) -> None:
        self._admit = hook
        self._hooks = _with(self._hooks, _ADMIT, hook is not None)

    # ------------------------------------------------------------------ attempts
    def start(self, version: int, engine: RolloutEngine | None = None,
              held: bool = False) -> None:
        """A fresh attempt on weights `version`, on `engine` (None: the least-loaded one when
        its first turn is submitted), from the prompt: the environment reset (if any), then
        the first turn. `held`: nothing runs until the policy calls `reset` or `submit`
        (lock-step interaction)."""
        if self.state is OPEN:
            raise RuntimeError(f"sample {self.prompt_id}/{self.slot}: attempt {self.attempt} "
                               "restarted before it ended")
        job = self.job
        job.started += 1
        self.state = OPEN
        self.attempt += 1
        self._key = None
        self.epoch = job.epoch
        self.version = version
        self.turn = 0
        self.context = self.prompt_tokens
        self.engine = engine
        self.request = None
        self.stopped = False
        if held:
            return
        if self.reset_s > 0:
            self.reset()
        else:
            _submit(self, 0)

    def reset(self) -> None:
        """The environment reset before the first turn, on the env pool."""
        self._counts.pool.run_then(self.reset_s, _env_ready, (self, self.attempt))

    def end(self, how: str) -> None:
        """Record how the current attempt ended (exactly once; ignored for an attempt a job
        restart voided)."""
        if self.epoch != self._counts.epoch:
            return
        if self.state is not OPEN:
            raise RuntimeError(f"sample {self.prompt_id}/{self.slot}: attempt {self.attempt} "
                               f"ended twice ({self.state}, then {how})")
        self.state = how
        self.job.outcomes[how] += 1

    @property
    def is_open(self) -> bool:
        """Whether an attempt has started and has no outcome yet."""
        return self.state is OPEN

    @property
    def outcome(self) -> str | None:
        """How the last attempt ended (None while one runs, or before the first)."""
        return None if self.state is OPEN else self.state

    def cancel(self) -> None:
        """Void the current attempt: its request is aborted, every later callback of it
        lapses (its outcome is the caller's to `end`)."""
        self.attempt += 1
        self._key = None
        req = self.request
        self.request = None
        if req is not None and req.status in LIVE and self.engine is not None:
            self.engine.abort([req])

    def stop(self) -> None:
        """Submit nothing more: a turn in flight may still finish (and, if it is the last,
        the sample with it); no environment step or later turn follows."""
        self.stopped = True

    @property
    def alive(self) -> bool:
        """Whether its attempt goes on (no job restart since it began, not stopped)."""
        return _alive(self)

    # ------------------------------------------------------------------ context
    def context_at(self, turn: int) -> int:
        """The context when turn `turn` starts: the prompt, and every earlier turn's response
        and observation."""
        turns = self.turns
        if turns is None:
            return self.prompt_tokens
        return (self.prompt_tokens + sum(turns.response_tokens[:turn])
                + sum(turns.obs_tokens[:turn]))

    # ------------------------------------------------------------------ turns
    def submit(self) -> None:
        """Submit the current turn (lock-step: the policy releases the turn)."""
        _submit(self, 0)

    def resume(self, aborted: Request, engine: RolloutEngine | None = None) -> None:
        """The current turn again after `aborted` (its request) was aborted: what it
        generated is kept and re-prefilled, up to the last token, which is generated anew;
        on `engine` if given (a migration; later turns follow it)."""
        if engine is not None:
            self.engine = engine
        _submit(self, min(aborted.generated, aborted.output_tokens - 1))

    def requeue(self, req: Request, keep_tokens: int, engine: RolloutEngine) -> bool:
        """An engine crash took `req` (its turn in flight) off its engine: submit it again
        at the front of `engine` (its engine back, or another that takes the sample over:
        later turns follow it), with `keep_tokens` of its output kept (re-prefilled).
        False, and nothing is submitted, if the sample no longer waits for it (cancelled,
        stopped, ended, or voided by a job restart)."""
        if req is not self.request or self.state is not OPEN or not self.alive:
            return False
        self.engine = engine
        req.prefix_tokens = keep_tokens
        engine.submit(req, front=True)
        return True

    def env_step(self) -> None:
        """The environment step after the current turn (through the fault hooks if any)."""
        _env_step(self)

    def step_done(self) -> None:
        """The environment step after the current turn has run: the next turn."""
        _step_done(self)

    def on_timer(self, arg: Any) -> None:
        """The environment step of attempt `arg` (`_env_step`) has run: the next turn, if
        the attempt goes on. The drain calls it natively (a TimerTarget)."""
        attempt: i64 = arg
        if attempt == self.attempt and _alive(self):
            _step_done(self)

    def rewind(self, turn: int, delay_s: float) -> None:
        """Go back to the start of turn `turn` (its context as it was then: a restored
        snapshot, or the prompt for 0) and submit it after `delay_s` on the env pool (the
        restore or restart)."""
        self.turn = turn
        self.context = self.context_at(turn)
        self._counts.pool.run_then(delay_s, _env_ready, (self, self.attempt))

    # ------------------------------------------------------------------ finishing
    def _check_whole(self) -> None:
        """The finished context is exactly the prompt, every turn's response and every
        observation once: no turn lost or doubled by recoveries."""
        expected = self.context_at(self.last + 1)
        if self.context != expected:
            raise RuntimeError(f"sample {self.prompt_id}/{self.slot}: context {self.context} "
                               f"tokens after recovery, expected {expected}")


def release(rollouts: Iterable[Rollout]) -> None:
    """Drop the hooks a batch set on its rollouts (on_finish, after_turn, after_env) once
    the batch is over. A hook holds the policy's state for the batch (a barrier, a
    closure), which holds the samples, which hold their rollouts: a reference cycle that
    only the garbage collector frees, after scanning every rollout and sample of the step.
    Released, a step's rollouts and samples are freed as soon as the step lets go of them
    (benchmarks/bench_large_sync.py, 100 steps: the collector's time 1.3 -> 0.1 s). Only
    for rollouts that are over, finished or stopped: a late callback of one is ignored."""
    for r in rollouts:
        r.on_finish = None
        r.request = None  # an aborted request's tag is its rollout: a cycle too
        if r.after_turn is not None:
            r.after_turn = None
        if r.after_env is not None:
            r.after_env = None


def _turn_done(req: Request) -> None:
    """The engine's callback when a rollout's request (`req.tag` is the rollout) has
    finished or been aborted. A plain function, not a bound method: no method object is
    made, and tracked by the garbage collector, per request (a few percent of a large
    run's time)."""
    r: Rollout = req.tag
    if req is not r.request or req.status != "finished":
        return  # aborted (whoever aborted it decides what follows), or voided
    if r.epoch != r._counts.epoch:
        return
    r.request = None
    if not r._multi:  # single-turn (`_finish` inlined: the common case)
        generated = req.generated
        r.context += generated
        if r.on_finish is not None:
            r.on_finish(Sample(r.prompt_id, r.prompt_tokens, generated, r.version, r.reward_s,
                               r.task, None, 0, r))
        return
    i = r.turn
    r.context += req.generated + r._obs_now
    hooks = r._hooks
    if hooks & _FAULTS:
        faults = r._faults
        if faults is not None:
            faults.turn_done(r, r._counts.timers.now_s() - r.t_turn)
    if i == r.last:
        _finish(r, req.generated)
    elif r.stopped:
        return
    elif hooks & _AFTER_TURN:
        after = r._after_turn
        if after is not None:
            after(r)
    else:
        _env_step(r)


# A turn's steps as plain functions, not methods: on an instance of an interpreted subclass
# a compiled call of a method goes through a Python-level lookup and call (mypyc's glue),
# ~400 instructions each, four per turn (issue 40: the async policy's `_Slot` was one until
# the policy was compiled). Functions are called directly, whatever the rollout's class.
# The methods that are the public API delegate to them.
def _submit(r: Rollout, prefix: int) -> None:
    """Submit the current turn, with `prefix` tokens of its output kept (re-prefilled)."""
    if r.stopped:
        return
    if r._hooks & _ADMIT and r.version < r._counts.admit_from:
        admit = r._admit
        if admit is not None and not admit(r):
            return
    counts = r._counts
    rid: i64 = 0
    if r.turn == 0:  # an id reserved at launch (a later turn's never is: `first_rid`)
        rid = r.first_rid
        if rid:
            r.first_rid = 0
    if not rid:
        counts.rid = rid = counts.rid + 1
    r.rid = rid
    # the current turn's response length (and, multi-turn, what its end reads)
    if not r._multi:
        out: int = r.response_tokens
    else:
        cols = r._cols
        at: i64 = r.turn * _ROW
        out = read_i32_le(cols, at)
        r._obs_now = i64(read_i32_le(cols, at + _OBS_AT))
        r._env_now = read_f64_le(cols, at + _ENV_AT)
    key: object | None = None
    if r.keyed:
        key = r._key
        if key is None:
            key = r._key = object()
    req = Request(rid, r.context, out, prefix, _TURN_DONE, r, key)
    r.request = req
    engine = r.engine
    if engine is None:
        job = r.job
        engine = r.engine = min(job.cluster.engines, key=_LOAD)
        if engine.down:  # crashed (faults): a live one takes the sample
            engine = r.engine = job.live_engine()
    r.t_turn = counts.timers.now_s()
    engine.submit(req)


def _alive(r: Rollout) -> bool:
    """`Rollout.alive`: no job restart since its attempt began, and not stopped."""
    return r.epoch == r._counts.epoch and not r.stopped


def _env_step(r: Rollout) -> None:
    """`Rollout.env_step`."""
    if r._hooks & _FAULTS:
        faults = r._faults
        if faults is not None:
            faults.env_step(r)
            return
    assert r._multi
    # The rollout is the timer's target and the attempt its argument (`on_timer`): no
    # (rollout, attempt) tuple a step, made now and freed out of the caches when the step
    # ends (issue 40); a small int is not made either.
    r._counts.pool.run_then(r._env_now, r, r.attempt)


def _step_done(r: Rollout) -> None:
    """`Rollout.step_done`."""
    r.turn += 1
    _env_done(r)


def _env_done(r: Rollout) -> None:
    """The environment is ready for the current turn: the policy's `after_env` hook holds
    the sample (lock-step), else the turn is submitted. (The hook through a local:
    compiled, `r.after_env(r)` called the property's getter with `r`, not the hook.)"""
    if r._hooks & _AFTER_ENV:
        after = r._after_env
        if after is not None:
            after(r)
            return
    _submit(r, 0)


def _env_ready(job: tuple[Rollout, int]) -> None:
    """The environment (reset, restored or restarted) of attempt `job[1]` is ready: the
    current turn."""
    r, attempt = job
    if attempt != r.attempt or not _alive(r):
        return
    _env_done(r)


def _obs_total(cols: bytes) -> int:
    """The observation tokens of every turn in `cols` (a rollout's packed turns): read
    there, natively, rather than out of its `Turns` (which may hold only packed rows)."""
    total: i64 = 0
    for at in range(_OBS_AT, len(cols), _ROW):
        total += i64(read_i32_le(cols, at))
    return total


def _finish(r: Rollout, last_response: int) -> None:
    """After the last turn: the sample, to `on_finish`."""
    prompt = r.prompt_tokens
    turns = r.turns
    if turns is None or r.last == 0:
        sample = Sample(r.prompt_id, prompt, r.context - prompt, r.version,
                        r.reward_s, r.task, None, 0, r)
    else:
        if r.faults is not None:
            r._check_whole()
        sample = Sample(r.prompt_id, prompt, r.context - prompt, r.version,
                        r.reward_s, r.task, last_response, _obs_total(r._cols), r)
    if r.on_finish is not None:
        r.on_finish(sample)


# The callbacks a turn hands over: native objects (called directly by the engine and the
# timers' drain), each one instance held in a static (Final: compiled, a module global is
# otherwise a lookup in the module's dict at each use).
class _TurnDone(DoneTarget):
    """`_turn_done` as a request's `on_done`, called natively by the engine."""

    def request_done(self, req: Request) -> None:
        _turn_done(req)


_TURN_DONE: Final = _TurnDone()

