"""The workload generator: the prompt groups of each training step.

Owns `Workload`, which turns a `WorkloadConfig` and a seed into the prompts of step k, either
synthetic (a Gaussian copula over the configured length distributions), replayed from a
PolyTrace trace, or replayed exactly from recorded rollouts (step k's recorded groups, with
their turns, environment-step and reward latencies). Every policy that asks for step k with
the same seed sees the same prompts and lengths (common random numbers), whatever it asked
for before.

Random layout (part of the determinism contract; changing it changes every run's lengths):
prompts are drawn in chunks of CHUNK_PROMPTS. Chunk c of step k has its own stream keyed
(k, c, 0) for the per-prompt draws (difficulty z, prompt-length noise, trace pick) and
streams keyed (k, c, 1 + b) for the response noise of sample columns [b*B, (b+1)*B),
B = SAMPLE_BLOCK. Every draw has a fixed size, so asking for more prompts or more samples
only appends: `batch(k, m, s)` is a prefix (in prompts and in samples) of `batch(k, n, t)`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rlsim.config.errors import ScenarioError
from rlsim.config.workload import WorkloadConfig
from rlsim.workload.distributions import (
    FloatArray,
    IntArray,
    Quantile,
    quantile_function,
    resolve_path,
    to_tokens,
)
from rlsim.workload.groups import TURN_ROW_BYTES, PromptGroup, Turn, Turns
from rlsim.workload.multiturn import read_multiturn
from rlsim.workload.polytrace import read_polytrace
from rlsim.workload.rng import keyed_stream
from rlsim.workload.rollouts import RecordedGroup, read_rollouts

CHUNK_PROMPTS = 1024
SAMPLE_BLOCK = 8
_TOLIST_GROUPS = 16  # synthetic agentic groups converted to Python numbers at a time
# Synthetic agentic groups drawn and transformed at a time (a multiple of _TOLIST_GROUPS):
# 64 groups of 8 samples over 30 turns are ~120 KB an array.
_BLOCK_GROUPS = 64
# A turn as a rollout keeps it (`groups.TURN_ROW_BYTES`, `rollout.pack_turns`).
_ROW_DTYPE = np.dtype([("out", "<i4"), ("obs", "<i4"), ("env", "<f8")])
PROMPT_ID_STRIDE = 1_000_000
_REDRAW_KEY = 2**20  # stream keys of redrawn responses: (step, chunk, _REDRAW_KEY, attempt)
_AGENTIC_KEY = 2**21  # stream keys of agentic draws: (step, chunk, _AGENTIC_KEY + what)
"""prompt_id = step * PROMPT_ID_STRIDE + index, so a step holds at most this many prompts."""


def _chunk_rows(first: int, n: int) -> slice:
    """Prompts `first` to n - 1 within the chunks drawn for them (from chunk
    first // CHUNK_PROMPTS on)."""
    start = first // CHUNK_PROMPTS * CHUNK_PROMPTS
    return slice(first - start, n - start)


class _NormalRows:
    """Standard normals of one kind of agentic draw (stream key `key`), `shape` a prompt,
    prompt after prompt from prompt `first`: each chunk of CHUNK_PROMPTS prompts has a
    stream of its own, read on in order, so a prompt's rows are the same however the
    prompts are taken (a stream fills its values one after another, and a draw of k rows
    then m rows is a draw of k + m rows)."""

    def __init__(self, seed_seq: np.random.SeedSequence, step: int, key: int,
                 shape: tuple[int, ...], first: int) -> None:
        self._seed_seq, self._step, self._key, self._shape = seed_seq, step, key, shape
        self._at = first  # the next prompt
        self._chunk = first // CHUNK_PROMPTS
        self._rng = keyed_stream(seed_seq, step, self._chunk, key)
        skip = first - self._chunk * CHUNK_PROMPTS
        if skip:  # the chunk's prompts before `first`: drawn, not used
            self._rng.standard_normal((skip, *shape))

    def take(self, k: int) -> FloatArray:
        """The rows of the next k prompts, (k, *shape)."""
        parts = []
        while k > 0:
            chunk_end = (self._chunk + 1) * CHUNK_PROMPTS
            m = min(k, chunk_end - self._at)
            parts.append(self._rng.standard_normal((m, *self._shape)))
            self._at += m
            k -= m
            if self._at == chunk_end:
                self._chunk += 1
                self._rng = keyed_stream(self._seed_seq, self._step, self._chunk, self._key)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


@dataclass(frozen=True, slots=True)
class _Replayed:
    """A recorded prompt group with its caps applied, ready to become a PromptGroup."""

    prompt_tokens: int
    trajectory_tokens: tuple[int, ...]  # per sample: turns' responses + observations
    turns: tuple[tuple[Turn, ...], ...]
    reward_s: tuple[float | None, ...]


def task_of_prompts(cfg: WorkloadConfig, n: int) -> list[int]:
    """The task index of each of a batch's n prompts: interleaved in the configured shares
    (smooth weighted round-robin: prompt i goes to the task furthest below its share of
    i + 1 prompts, ties to the first listed), so every batch, and every prefix of one,
    holds the tasks in their shares up to rounding, and the same index always has the same
    task."""
    shares = [t.share for t in cfg.tasks or []]
    counts = [0] * len(shares)
    out = []
    for i in range(n):
        k = max(range(len(shares)), key=lambda j: (shares[j] * (i + 1) - counts[j], -j))
        counts[k] += 1
        out.append(k)
    return out


def context_capped(turns: Sequence[Turn], prompt_tokens: int, max_context_len: int,
                   ) -> tuple[Turn, ...]:
    """A trajectory's turns as a framework with a context cap runs them (ROLL's agentic env
    managers, make_decision: a turn generates at most sequence_length - context tokens, and
    a turn that would start at or past the cap is not run, the trajectory ends; the
    observation that filled the context is dropped from the sample). The kept last turn
    has no environment step after it, as every last turn in rlsim: ROLL still runs that
    one step, rlsim leaves it out."""
    if prompt_tokens >= max_context_len:
        raise ValueError(f"a prompt of {prompt_tokens} tokens leaves no room under "
                         f"max_context_len {max_context_len}")
    context = prompt_tokens
    out: list[Turn] = []
    for i, turn in enumerate(turns):
        response = min(turn.response_tokens, max_context_len - context)
        context += response
        # the next turn starts only if the context after this turn's observation has room
        if i == len(turns) - 1 or context + turn.obs_tokens >= max_context_len:
            out.append(Turn(response))
            break
        out.append(Turn(response, turn.env_s, turn.obs_tokens))
        context += turn.obs_tokens
    return tuple(out)


class Workload:
    """The prompt groups of every training step of one job, drawn from its own streams.

    `seed_seq` should be the workload's own child of the run's root SeedSequence, so that
    no other consumer shares its streams. `base_dir` is the scenario file's directory:
    relative trace and empirical-length paths are resolved against it.

    Recorded rollouts (trace format `rollouts`) are checked against the config when loaded:
    a mismatch raises `ScenarioError` (a ValueError) naming the field to change.
    """

    def __init__(
        self, cfg: WorkloadConfig, seed_seq: np.random.SeedSequence, base_dir: Path
    ) -> None:
        self.cfg = cfg
        self._seed_seq = seed_seq
        self._rho = cfg.group_correlation
        self._prompt_corr = cfg.difficulty_length_correlation
        self._trace_prompt_tokens: IntArray | None = None
        self._trace_response_tokens: IntArray | None = None
        self._prompt_q: Quantile | None = None
        self._response_q: Quantile | None = None
        self._rollouts: list[list[_Replayed]] | None = None
        self._pool: list[_Replayed] | None = None  # polytrace_multiturn prompt groups
        self.skipped_groups = 0  # polytrace_multiturn groups with too few samples
        self._task_q: list[Quantile] = []
        self._agentic_q: dict[str, Quantile] = {}
        if cfg.trace is not None and cfg.trace.format == "rollouts":
            self._load_rollouts(resolve_path(cfg.trace.path, base_dir))
        elif cfg.trace is not None and cfg.trace.format == "polytrace_multiturn":
            self._load_multiturn(resolve_path(cfg.trace.path, base_dir))
        elif cfg.trace is not None:
            self._load_trace(resolve_path(cfg.trace.path, base_dir))
        else:
            self._prompt_q = quantile_function(cfg.prompt_len, base_dir)
            default = cfg.response_len
            for t in cfg.tasks or []:
                dist = t.response_len or default
                assert dist is not None  # the schema requires one source for every task
                self._task_q.append(quantile_function(dist, base_dir))
            if default is not None:
                self._response_q = quantile_function(default, base_dir)
            a = cfg.agentic
            if a is not None:
                for name in ("turns", "env_reset", "env_step", "obs_tokens"):
                    dist = getattr(a, name)
                    if dist is not None:
                        # seconds and observation tokens may be 0; turns may not
                        self._agentic_q[name] = quantile_function(dist, base_dir,
                                                                  name != "turns")

    @property
    def trace_prompts(self) -> int | None:
        """Training prompts in the replayed trace, or None for a synthetic workload."""
        if self._rollouts is not None:
            return sum(len(groups) for groups in self._rollouts)
        if self._pool is not None:
            return len(self._pool)
        tokens = self._trace_prompt_tokens
        return None if tokens is None else int(tokens.size)

    @property
    def max_samples_per_prompt(self) -> int | None:
        """The most responses a prompt can have (a trace records a fixed number per prompt),
        or None when any number can be drawn."""
        if self._pool is not None:
            return min(len(g.trajectory_tokens) for g in self._pool)
        traced = self._trace_response_tokens
        return None if traced is None else int(traced.shape[1])

    @property
    def recorded_steps(self) -> int | None:
        """Steps in the recorded rollouts, or None unless the trace format is rollouts."""
        return None if self._rollouts is None else len(self._rollouts)

    def longest_sequence_tokens(self, steps: int) -> int | None:
        """Recorded trajectories only: the longest prompt + trajectory (the context of a
        sample's last turn) over the first `steps` steps' default batches of recorded
        rollouts, or over the whole multi-turn trace; None otherwise."""
        s = self.cfg.samples_per_prompt
        if self._pool is not None:
            return max(g.prompt_tokens + t for g in self._pool for t in g.trajectory_tokens[:s])
        if self._rollouts is None:
            return None
        return max(
            (g.prompt_tokens + t for groups in self._rollouts[:steps] for g in groups
             for t in g.trajectory_tokens[:s]),
            default=0,
        )

    def batch(
        self, step: int, n_prompts: int | None = None, n_samples: int | None = None,
        first: int = 0,
    ) -> list[PromptGroup]:
        """The first n_prompts groups of training step `step`, each with n_samples responses,
        from the `first` on (a policy that draws more prompts of a step later takes only the
        new ones: the groups are those of the whole batch, built only from `first`).

        Defaults: prompts_per_step and samples_per_prompt. Over-provisioning policies ask for
        more of either; the result starts with exactly what the defaults give.
        """
        n = self.cfg.prompts_per_step if n_prompts is None else n_prompts
        s = self.cfg.samples_per_prompt if n_samples is None else n_samples
        if self._rollouts is not None:
            return self._replay_rollouts(step, n, s)[first:]
        self._check_request(step, n, s)
        if n == 0 or first >= n:
            return []
        if self._pool is not None:
            return self._replay_pool(step, n, s)[first:]
        if self._agentic_q:
            # Each trajectory's turns are Python objects: build only the ones asked for.
            return self._agentic(step, n, s, first)
        if self._trace_response_tokens is not None:
            prompts, responses = self._replay(step, n, s)
            prompts, responses = prompts[first:], responses[first:]
        else:
            prompts, responses = self._synthesize(step, n, s, first)
        cap = self.cfg.max_response_len
        first_id = step * PROMPT_ID_STRIDE + first
        names = [t.name for t in self.cfg.tasks or []]
        tasks = task_of_prompts(self.cfg, n)[first:] if names else [None] * (n - first)
        return [
            PromptGroup(first_id + i, p, tuple(r), cap,
                        task=None if k is None else names[k])
            for i, (p, r, k) in enumerate(zip(prompts.tolist(), responses.tolist(), tasks,
                                              strict=True))
        ]

    def redraw(self, group: PromptGroup, n_samples: int, attempt: int = 1) -> PromptGroup:
        """The prompt of `group` generated again with `n_samples` fresh responses (a policy
        that restarts a prompt from scratch, e.g. tail batching's long round).

        A synthetic prompt keeps its difficulty (the shared score sqrt(rho) z of its group)
        and draws new per-response noise from a stream keyed by the prompt and `attempt`,
        so a prompt queued for being slow is not also held to its slow draws. A trace,
        recorded rollouts or multi-turn trajectories have no other responses to give here:
        their first `n_samples` are reused."""
        if self._prompt_q is None or group.turns is not None:
            return replace(
                group, response_tokens=group.response_tokens[:n_samples],
                turns=None if group.turns is None else group.turns[:n_samples],
                reset_s=None if group.reset_s is None else group.reset_s[:n_samples])
        step, i = divmod(group.prompt_id, PROMPT_ID_STRIDE)
        chunk, row = divmod(i, CHUNK_PROMPTS)
        z = keyed_stream(self._seed_seq, step, chunk, 0).standard_normal(CHUNK_PROMPTS)[row]
        noise = keyed_stream(self._seed_seq, step, chunk, _REDRAW_KEY, attempt).standard_normal(
            (CHUNK_PROMPTS, n_samples))[row]
        scores = math.sqrt(self._rho) * z + math.sqrt(1.0 - self._rho) * noise
        names = [t.name for t in self.cfg.tasks or []]
        if group.task is not None and group.task in names:
            q = self._task_q[names.index(group.task)]
        else:
            assert self._response_q is not None
            q = self._response_q
        lengths = to_tokens(q(scores), self.cfg.max_response_len)
        return replace(group, response_tokens=tuple(lengths.tolist()))

    def _check_request(self, step: int, n: int, s: int) -> None:
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        if not 0 <= n <= PROMPT_ID_STRIDE:
            raise ValueError(f"n_prompts must be in [0, {PROMPT_ID_STRIDE}], got {n}")
        if s < 1:
            raise ValueError(f"n_samples must be >= 1, got {s}")
        most = self.max_samples_per_prompt
        if most is not None and s > most:
            raise ValueError(
                f"n_samples={s} exceeds the {most} responses per prompt that every "
                "prompt of the trace has"
            )

    def _prompt_draws(self, step: int, n: int, first: int = 0,
                      ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Per prompt `first` to n - 1: difficulty z ~ N(0,1), prompt noise ~ N(0,1), trace
        pick ~ U[0,1). Drawn chunk by chunk, so the rows are the same whatever `first`."""
        z, noise, pick = [], [], []
        for chunk in range(first // CHUNK_PROMPTS, math.ceil(n / CHUNK_PROMPTS)):
            rng = keyed_stream(self._seed_seq, step, chunk, 0)
            z.append(rng.standard_normal(CHUNK_PROMPTS))
            noise.append(rng.standard_normal(CHUNK_PROMPTS))
            pick.append(rng.random(CHUNK_PROMPTS))
        rows = _chunk_rows(first, n)
        return np.concatenate(z)[rows], np.concatenate(noise)[rows], np.concatenate(pick)[rows]

    def _response_noise(self, step: int, n: int, s: int, first: int = 0) -> FloatArray:
        """Per response of prompts `first` to n - 1: independent N(0,1) noise, shape
        (n - first, s)."""
        blocks = math.ceil(s / SAMPLE_BLOCK)
        rows = [
            np.hstack([
                keyed_stream(self._seed_seq, step, chunk, 1 + b).standard_normal(
                    (CHUNK_PROMPTS, SAMPLE_BLOCK)
                )
                for b in range(blocks)
            ])
            for chunk in range(first // CHUNK_PROMPTS, math.ceil(n / CHUNK_PROMPTS))
        ]
        return np.vstack(rows)[_chunk_rows(first, n), :s]

    def _synthesize(self, step: int, n: int, s: int, first: int = 0,
                    ) -> tuple[IntArray, IntArray]:
        """Prompt and response lengths of prompts `first` to n - 1 (only those are drawn:
        the draws are keyed by chunk of prompts and every transform is elementwise)."""
        # Gaussian copula: the scores of one group share sqrt(rho) z, so any two have
        # correlation rho, while each score is N(0,1) and hence has the configured marginal.
        assert self._prompt_q is not None
        z, prompt_noise, _ = self._prompt_draws(step, n, first)
        noise = self._response_noise(step, n, s, first)
        rho = self._rho
        scores = math.sqrt(rho) * z[:, None] + math.sqrt(1.0 - rho) * noise
        if self._task_q:
            # Each task's prompts take their lengths from the task's own marginal.
            task = np.asarray(task_of_prompts(self.cfg, n)[first:])
            lengths = np.empty_like(scores)
            for k, q in enumerate(self._task_q):
                rows = task == k
                lengths[rows] = q(scores[rows])
        else:
            assert self._response_q is not None
            lengths = self._response_q(scores)
        responses = to_tokens(lengths, self.cfg.max_response_len)
        c = self._prompt_corr
        prompt_scores = c * z + math.sqrt(1.0 - c * c) * prompt_noise
        prompts = to_tokens(self._prompt_q(prompt_scores), self.cfg.max_prompt_len)
        return prompts, responses

    def _agentic(self, step: int, n: int, s: int, first: int = 0) -> list[PromptGroup]:
        """Synthetic multi-turn trajectories (groups `first` to n - 1 of the step's first n).
        A sample's turn count and each turn's response share the prompt's difficulty through
        the group copula (rho); environment steps, observations and resets are independent
        draws."""
        a = self.cfg.agentic
        assert a is not None and self._prompt_q is not None and self._response_q is not None
        if first >= n:
            return []
        q = self._agentic_q
        rho, t_max = self._rho, a.max_turns
        # Only the groups asked for are drawn and transformed (a policy that replaces a few
        # groups asks for the last few of a large batch): every draw is keyed by its chunk
        # of prompts and every transform is elementwise, so the values are the same.
        z, prompt_noise, _ = self._prompt_draws(step, n, first)
        c = self._prompt_corr
        prompts = to_tokens(self._prompt_q(c * z + math.sqrt(1.0 - c * c) * prompt_noise),
                            self.cfg.max_prompt_len)
        # The kinds of draw, each a prompt's rows after another's: turn counts, responses,
        # environment steps, observations (over max_turns turns) and resets.
        kinds = [(0, (s,)), (1, (s, t_max)), (2, (s, t_max)), (3, (s, t_max))]
        if "env_reset" in q:
            kinds.append((4, (s,)))
        rows = [_NormalRows(self._seed_seq, step, _AGENTIC_KEY + what, shape, first)
                for what, shape in kinds]
        shared = math.sqrt(rho) * z
        prompt_l = prompts.tolist()
        out: list[PromptGroup] = []
        # A block of groups at a time, drawn, transformed and converted: a batch's arrays
        # at once (1,056 groups: ~2 MB each, a dozen of them) were written and read out of
        # the CPU's caches, and pushed out what the run keeps in them (issue 40). A kind's
        # rows come off its streams in order, so they are those of one draw of the batch.
        for b0 in range(0, n - first, _BLOCK_GROUPS):
            b1 = min(b0 + _BLOCK_GROUPS, n - first)
            out += self._agentic_block(step, s, first + b0, shared[b0:b1], prompt_l[b0:b1],
                                       [r.take(b1 - b0) for r in rows])
        return out

    def _agentic_block(self, step: int, s: int, g0: int, shared: FloatArray,
                       prompt_l: list[int], normals: list[FloatArray]) -> list[PromptGroup]:
        """Groups g0, g0 + 1, ... of a step from their difficulty (`shared`, scaled by
        sqrt(rho)), prompt lengths and standard normals of each kind (`_agentic`)."""
        a = self.cfg.agentic
        assert a is not None and self._response_q is not None
        q = self._agentic_q
        t_max, cap = a.max_turns, self.cfg.max_response_len
        own = math.sqrt(1.0 - self._rho)
        turns = np.clip(np.rint(q["turns"](shared[:, None] + own * normals[0])), 1,
                        t_max).astype(np.int64)
        # Every draw is (group, sample, turn) over max_turns turns, but a sample uses only
        # its first `turns`: the transforms are elementwise, so only the turns used are
        # transformed and converted, in one flat run of (group, sample, turn) order (a
        # sample's turns are consecutive; about a third of max_turns here).
        used = np.arange(t_max) < turns[:, :, None]
        lengths = to_tokens(self._response_q(
            np.broadcast_to(shared[:, None, None], used.shape)[used]
            + own * normals[1][used]), cap)
        env_s = np.maximum(q["env_step"](normals[2][used]), 0.0)
        obs = to_tokens(q["obs_tokens"](normals[3][used]), self.cfg.max_prompt_len)
        reset = np.maximum(q["env_reset"](normals[4]), 0.0) if len(normals) > 4 else None
        # A sample's last turn has no environment step after it.
        ends = np.cumsum(turns.reshape(-1))
        env_s[ends - 1] = 0.0
        obs[ends - 1] = 0
        totals_a = np.add.reduceat(lengths + obs, ends - turns.reshape(-1))
        first_id = step * PROMPT_ID_STRIDE
        # A sample's turns as packed rows (`Turns.from_packed`: no number object a turn),
        # or where a token count may not fit them, as Python numbers (tolist: no numpy
        # scalar per value) in three slices (`Turns`); either way a few groups at a time:
        # the block's turns at once made each column out of the CPU's caches by the time
        # it was sliced (issue 40). The numbers are the same.
        bounds, totals_l = ends.tolist(), totals_a.tolist()
        reset_l = None if reset is None else reset.tolist()
        capped = a.max_context_len
        out = []
        lo = 0
        resp: list[int] = []
        env_l: list[float] = []
        obs_l: list[int] = []
        base = 0  # the turn the block's lists start at
        packed: bytes | None = None
        # int32 token counts (`rollout.pack_turns` refuses larger ones, with its message)
        packable = max(cap, self.cfg.max_prompt_len) < 2**31
        row = TURN_ROW_BYTES
        n_groups = len(prompt_l)
        for g in range(n_groups):
            if g % _TOLIST_GROUPS == 0:
                end = bounds[min(g + _TOLIST_GROUPS, n_groups) * s - 1]
                base = lo
                if packable:  # the turns as a rollout keeps them (`Turns.from_packed`)
                    rows = np.empty(end - lo, _ROW_DTYPE)
                    rows["out"], rows["obs"], rows["env"] = lengths[lo:end], obs[lo:end], \
                        env_s[lo:end]
                    packed = rows.tobytes()
                else:
                    resp, env_l = lengths[lo:end].tolist(), env_s[lo:end].tolist()
                    obs_l = obs[lo:end].tolist()
            samples: list[Turns] = []
            for j in range(g * s, g * s + s):
                hi = bounds[j]
                i0, i1 = lo - base, hi - base
                sample = (Turns.from_packed(packed[row * i0:row * i1]) if packed is not None
                          else Turns(tuple(resp[i0:i1]), tuple(env_l[i0:i1]),
                                     tuple(obs_l[i0:i1])))
                lo = hi
                if capped is not None:
                    sample = Turns.of(context_capped(sample, prompt_l[g], capped))
                samples.append(sample)
            totals = (tuple(totals_l[g * s:g * s + s]) if capped is None else
                      tuple(sum(t.response_tokens) + sum(t.obs_tokens) for t in samples))
            out.append(PromptGroup(
                first_id + g0 + g, prompt_l[g], totals, cap, turns=tuple(samples),
                reset_s=None if reset_l is None else tuple(reset_l[g])))
        return out

    def _rows(self, step: int, n: int, size: int) -> IntArray:
        """Which of a trace's `size` prompts step `step`'s first n prompts replay."""
        trace = self.cfg.trace
        assert trace is not None
        if trace.order == "sequential":
            # Step k starts where step k-1's regular batch ended, whatever was over-provisioned,
            # so extra prompts of step k are the first prompts of step k+1.
            return (step * self.cfg.prompts_per_step + np.arange(n)) % size
        _, _, pick = self._prompt_draws(step, n)
        return np.minimum((pick * size).astype(np.int64), size - 1)

    def _replay(self, step: int, n: int, s: int) -> tuple[IntArray, IntArray]:
        tokens, responses = self._trace_prompt_tokens, self._trace_response_tokens
        assert tokens is not None and responses is not None
        rows = self._rows(step, n, tokens.size)
        return tokens[rows], responses[rows, :s]

    def _replay_pool(self, step: int, n: int, s: int) -> list[PromptGroup]:
        pool = self._pool
        assert pool is not None
        cap, first_id = self.cfg.max_response_len, step * PROMPT_ID_STRIDE
        return [
            PromptGroup(first_id + i, g.prompt_tokens, g.trajectory_tokens[:s], cap, g.turns[:s])
            for i, g in enumerate(pool[row] for row in self._rows(step, n, len(pool)).tolist())
        ]

    def _load_multiturn(self, path: Path) -> None:
        try:
            trace = read_multiturn(path, min_samples=self.cfg.samples_per_prompt)
        except ValueError as err:
            field = ("workload.samples_per_prompt" if "lower samples_per_prompt" in str(err)
                     else "workload.trace.path")
            raise ScenarioError(field, str(err)) from None
        self.skipped_groups = trace.skipped_groups
        self._pool = [self._capped(g) for g in trace.groups]

    def _load_trace(self, path: Path) -> None:
        trace = self.cfg.trace
        assert trace is not None
        records = read_polytrace(path, min_samples=self.cfg.samples_per_prompt)
        # Keep the widest column count every prompt has; batch() may ask up to that many.
        width = min(len(r.response_tokens) for r in records)
        raw = np.array([r.response_tokens[:width] for r in records], dtype=np.float64)
        self._trace_response_tokens = to_tokens(
            raw * trace.scale_response, self.cfg.max_response_len
        )
        self._trace_prompt_tokens = to_tokens(
            np.array([r.prompt_tokens for r in records], dtype=np.float64),
            self.cfg.max_prompt_len,
        )

    # ------------------------------------------------------------------ recorded rollouts
    def _replay_rollouts(self, step: int, n: int, s: int) -> list[PromptGroup]:
        rollouts = self._rollouts
        assert rollouts is not None
        if not 0 <= step < len(rollouts):
            raise ValueError(f"step {step} is not recorded: the rollouts cover steps 0.."
                             f"{len(rollouts) - 1}")
        recorded = rollouts[step]
        if not 0 <= n <= len(recorded):
            raise ValueError(f"n_prompts={n} exceeds the {len(recorded)} prompt groups recorded "
                             f"for step {step}; recorded rollouts cannot be over-provisioned")
        if s < 1:
            raise ValueError(f"n_samples must be >= 1, got {s}")
        groups = recorded[:n]
        width = min((len(g.trajectory_tokens) for g in groups), default=s)
        if s > width:
            raise ValueError(f"n_samples={s} exceeds the {width} samples recorded for some "
                             f"prompt group of step {step}; recorded rollouts cannot be "
                             "over-provisioned")
        cap = self.cfg.max_response_len
        first_id = step * PROMPT_ID_STRIDE
        out = []
        for i, g in enumerate(groups):
            rewards = g.reward_s[:s]
            out.append(PromptGroup(
                first_id + i, g.prompt_tokens, g.trajectory_tokens[:s], cap, g.turns[:s],
                None if all(r is None for r in rewards) else rewards,
            ))
        return out

    def _load_rollouts(self, path: Path) -> None:
        try:
            steps = read_rollouts(path)  # a missing file raises FileNotFoundError
        except ValueError as err:
            raise ScenarioError("workload.trace.path", str(err)) from None
        cfg = self.cfg
        for k, groups in enumerate(steps):
            if len(groups) != cfg.prompts_per_step:
                raise ScenarioError(
                    "workload.prompts_per_step",
                    f"{path}: step {k} records {len(groups)} prompt groups (lines "
                    f"{groups[0].line}-{groups[-1].line}) but prompts_per_step is "
                    f"{cfg.prompts_per_step}; set workload.prompts_per_step to the recorded "
                    "group count (every recorded step must have exactly that many)",
                )
        narrowest = min((g for groups in steps for g in groups), key=lambda g: len(g.samples))
        if len(narrowest.samples) < cfg.samples_per_prompt:
            raise ScenarioError(
                "workload.samples_per_prompt",
                f"{path}:{narrowest.line}: group has {len(narrowest.samples)} samples but "
                f"samples_per_prompt is {cfg.samples_per_prompt}; lower "
                f"workload.samples_per_prompt to at most {len(narrowest.samples)}",
            )
        self._rollouts = [[self._capped(g) for g in groups] for groups in steps]

    def _capped(self, g: RecordedGroup) -> _Replayed:
        """Apply max_prompt_len, and scale_response and max_response_len to every turn."""
        trace = self.cfg.trace
        assert trace is not None
        scale, cap = trace.scale_response, self.cfg.max_response_len

        def response(n: int) -> int:
            return min(max(round(n * scale), 1), cap)

        turns = tuple(
            tuple(Turn(response(t.response_tokens), t.env_s, t.obs_tokens) for t in sample.turns)
            for sample in g.samples
        )
        return _Replayed(
            prompt_tokens=min(g.prompt_tokens, self.cfg.max_prompt_len),
            trajectory_tokens=tuple(sum(t.response_tokens + t.obs_tokens for t in ts)
                                    for ts in turns),
            turns=turns,
            reward_s=tuple(sample.reward_s for sample in g.samples),
        )
