"""A sample's life (`entities.rollout`): turns, context, cache keys, attempts and outcomes."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
import simpy

from rlsim.entities.engine import Request, RolloutEngine
from rlsim.entities.env import EnvPool
from rlsim.entities.rollout import Rollout, RolloutJob, Sample, pack_turns
from rlsim.trace import Recorder
from rlsim.workload import Turn
from rlsim.workload.groups import Turns
from tests.conftest import ToyCost

TURNS = (Turn(30, 2.0, 7), Turn(20, 1.5, 5), Turn(10))  # 72 tokens after the prompt


def _job(engines: int = 1, prefix_caching: bool = True) -> tuple[RolloutJob, list[Request]]:
    """A job on toy engines; the second value collects every request submitted."""
    env = simpy.Environment()
    rec = Recorder("phase")
    submitted: list[Request] = []

    def engine(i: int) -> RolloutEngine:
        e = RolloutEngine(env, f"e{i}", ToyCost(), 100_000, 16, 4096, rec,
                          prefix_caching=prefix_caching)
        # A request submitted (never at the front here) joins the queue through this bound
        # method: the spy sees every one, in order. (The compiled engine takes no Python
        # subclass: issue 40.)
        join = e._wait_append

        def spy(req: Request) -> None:
            submitted.append(req)
            join(req)

        e._wait_append = spy
        return e

    cluster = SimpleNamespace(
        env=env, env_pool=EnvPool(env, 4, rec), engines=[engine(i) for i in range(engines)])
    return RolloutJob(cluster), submitted  # type: ignore[arg-type]


def _first_turn_end() -> float:
    """When the first turn of a lone `TURNS` sample finishes (its environment step, 2 s,
    follows)."""
    job, submitted = _job()
    Rollout(job, 1, 100, 72, TURNS).start(0)
    job.env.run()
    return submitted[0].t_finish


def _finished(job: RolloutJob, rollout: Rollout) -> list[Sample]:
    out: list[Sample] = []
    rollout.on_finish = out.append
    return out


def test_single_turn_uses_its_reserved_id_and_becomes_one_sample():
    job, submitted = _job()
    r = Rollout(job, 7, 100, 50, slot=3, task="math", first_rid=42)
    got = _finished(job, r)
    r.start(version=5, engine=job.cluster.engines[0])
    job.env.run()
    assert [q.rid for q in submitted] == [42]
    assert submitted[0].cache_key is None  # one turn: nothing to cache for later
    (s,) = got
    assert (s.prompt_id, s.prompt_tokens, s.response_tokens, s.version, s.task) == \
        (7, 100, 50, 5, "math")
    assert s.last_response_tokens is None and s.observation_tokens == 0
    assert s.rollout is r and r.is_open  # the outcome is the policy's to end
    job.end_samples(got, "trained")
    assert r.outcome == "trained" and job.outcomes == {"trained": 1}
    with pytest.raises(RuntimeError, match="ended twice"):
        r.end("trained")


def test_multi_turn_context_grows_by_responses_and_observations_on_one_engine():
    job, submitted = _job(engines=2)
    r = Rollout(job, 1, 100, 72, TURNS)
    got = _finished(job, r)
    r.start(0)  # no engine given: the least-loaded one, kept for every turn
    job.env.run()
    assert [q.prompt_tokens for q in submitted] == [100, 137, 162]
    assert [q.output_tokens for q in submitted] == [30, 20, 10]
    assert len({q.engine for q in submitted}) == 1
    assert submitted[1].t_submit >= submitted[0].t_finish + 2.0  # its environment step
    assert submitted[2].t_submit >= submitted[1].t_finish + 1.5
    (s,) = got
    assert (s.response_tokens, s.last_response_tokens, s.observation_tokens) == (72, 10, 12)
    assert s.judged_tokens("responses") == 60 and s.judged_tokens("last_response") == 10
    assert [r.context_at(t) for t in range(4)] == [100, 137, 162, 172]


def test_prefix_cache_key_is_per_attempt():
    job, submitted = _job()
    r = Rollout(job, 1, 100, 72, TURNS)
    r.start(0)
    job.env.run()
    keys = {q.cache_key for q in submitted}
    assert len(keys) == 1  # every turn extends the same context
    (key,) = keys
    # it holds nothing (an engine's cache keeps it), so the garbage collector leaves the
    # caches of keys alone
    import gc
    assert gc.get_referents(key) == [] and not gc.is_tracked(key)
    assert not gc.is_tracked(job.cluster.engines[0]._cache)
    engine = job.cluster.engines[0]
    assert engine.cache_hits == 2  # turns 1 and 2 prefill only their new tokens
    r.end("stale")
    r.start(1)  # new weights: a new attempt, a new key
    job.env.run()
    assert len({q.cache_key for q in submitted}) == 2
    assert engine.cache_hits == 4


def test_cancel_voids_an_attempt_in_its_environment_step():
    job, submitted = _job()
    r = Rollout(job, 1, 100, 72, TURNS)
    got = _finished(job, r)
    r.start(0)
    job.env.run(until=_first_turn_end() + 1.0)
    assert submitted[0].status == "finished" and len(submitted) == 1
    r.end("cancelled")
    r.cancel()  # during the environment step after turn 0
    job.env.run()
    assert len(submitted) == 1 and got == []


def test_cancel_aborts_the_turn_in_flight():
    job, submitted = _job()
    r = Rollout(job, 1, 100, 500)
    got = _finished(job, r)
    r.start(0)
    job.env.run(until=0.5)
    r.end("cancelled")
    r.cancel()
    job.env.run()
    assert submitted[0].status == "aborted" and got == []


def test_a_job_restart_voids_what_was_in_flight():
    job, submitted = _job()
    r = Rollout(job, 1, 100, 72, TURNS)
    got = _finished(job, r)
    r.start(0)
    job.env.run(until=_first_turn_end() + 1.0)
    assert submitted[0].status == "finished" and len(submitted) == 1
    job.counts.epoch += 1  # the job restarted during the environment step
    job.env.run()
    assert len(submitted) == 1 and got == [] and not r.alive


def test_resume_keeps_all_but_the_last_token():
    job, submitted = _job()
    r = Rollout(job, 1, 100, 500)
    got = _finished(job, r)
    r.start(0)
    job.env.run(until=0.5)
    engine = job.cluster.engines[0]
    (aborted,) = engine.abort()
    assert 0 < aborted.generated < 500
    r.resume(aborted)
    job.env.run()
    assert submitted[1].prefix_tokens == min(aborted.generated, 499)
    assert got[0].response_tokens == 500


def test_admit_can_take_a_sample_over_before_each_turn():
    job, submitted = _job()
    r = Rollout(job, 1, 100, 72, TURNS)
    seen: list[int] = []

    def admit(x: Rollout) -> bool:
        seen.append(x.turn)
        return x.turn < 2  # the third turn never runs

    r.admit = admit
    got = _finished(job, r)
    r.start(0)
    job.env.run()
    assert seen == [0, 1, 2] and len(submitted) == 2 and got == []


@pytest.mark.parametrize(("admit_from", "calls"), [(5, 0), (6, 3)])
def test_admit_hook_is_skipped_for_weights_the_job_admits(admit_from, calls):
    # Weights 5 or newer are vouched for by the job (`counts.admit_from`): the hook is not
    # called and every turn runs; for weights older than admit_from it is asked each turn.
    job, submitted = _job()
    job.counts.admit_from = admit_from
    r = Rollout(job, 1, 100, 72, TURNS)
    seen: list[int] = []
    r.admit = lambda x: seen.append(x.turn) is None  # admits, and counts the calls
    got = _finished(job, r)
    r.start(5)
    job.env.run()
    assert len(seen) == calls and len(submitted) == 3 and len(got) == 1


def test_start_of_an_open_attempt_raises():
    job, _ = _job()
    r = Rollout(job, 1, 100, 50)
    r.start(0)
    with pytest.raises(RuntimeError, match="restarted before it ended"):
        r.start(0)


class _FailOnce:
    """Fault hooks: the environment step after turn 1 fails once; the sample restarts
    from `resume` after 3 s."""

    def __init__(self, resume: int) -> None:
        self.resume = resume
        self.failed = False
        self.llm_s: list[float] = []

    def turn_done(self, rollout: Rollout, llm_s: float) -> None:
        self.llm_s.append(llm_s)

    def env_step(self, rollout: Rollout) -> None:
        assert rollout.turns is not None
        pool = rollout.job.env_pool
        if rollout.turn == 1 and not self.failed:
            self.failed = True
            pool.run_then(0.5, lambda _: rollout.rewind(self.resume, 3.0))
        else:
            pool.run_then(rollout.turns[rollout.turn].env_s, lambda _: rollout.step_done())


@pytest.mark.parametrize("resume", [0, 1])
def test_rewind_resumes_from_a_snapshot_or_the_start_with_its_context(resume: int):
    job, submitted = _job()
    r = Rollout(job, 1, 100, 72, TURNS)
    hooks = _FailOnce(resume)
    r.faults = hooks
    got = _finished(job, r)
    r.start(0)
    job.env.run()
    redo = [100, 137] if resume == 0 else [137]
    assert [q.prompt_tokens for q in submitted] == [100, 137, *redo, 162]
    assert len(hooks.llm_s) == len(submitted)
    assert got[0].response_tokens == 72  # the context was checked whole at the end


def test_lock_step_hooks_hold_a_sample_between_turns_and_steps():
    job, submitted = _job()
    r = Rollout(job, 1, 100, 72, TURNS)
    held: list[tuple[str, int]] = []
    r.after_turn = lambda x: held.append(("turn", x.turn))
    r.after_env = lambda x: held.append(("env", x.turn))
    got = _finished(job, r)
    r.start(0, job.cluster.engines[0], held=True)
    job.env.run()
    assert submitted == []  # nothing runs until released
    r.submit()
    job.env.run()
    assert held == [("turn", 0)] and len(submitted) == 1
    r.env_step()
    job.env.run()
    assert held[-1] == ("env", 1)
    r.submit()
    job.env.run()
    r.env_step()
    job.env.run()
    r.submit()
    job.env.run()
    assert len(got) == 1 and got[0].response_tokens == 72


def test_a_held_reset_ends_in_the_after_env_hook():
    """Lock-step with an environment reset: the reset's end calls `after_env` (which holds
    the sample), and nothing is submitted until the policy releases it."""
    job, submitted = _job()
    r = Rollout(job, 1, 100, 72, TURNS, reset_s=2.0)
    held: list[tuple[str, int]] = []
    r.after_env = lambda x: held.append(("env", x.turn))
    r.start(0, job.cluster.engines[0], held=True)
    r.reset()
    job.env.run()
    assert held == [("env", 0)] and submitted == []


def test_hooks_set_and_cleared_are_called_or_not():
    """A hook set and then cleared (as `release` clears a batch's) is not called: a turn
    tests which hooks are set by flags the hooks' setters keep, not the hooks."""
    job, submitted = _job()
    r = Rollout(job, 1, 100, 72, TURNS)
    calls: list[str] = []
    r.after_turn = lambda x: calls.append("turn")
    r.after_env = lambda x: calls.append("env")
    r.admit = lambda x: calls.append("admit") is None
    r.faults = _FailOnce(0)
    assert r.after_turn is not None and r.after_env is not None and r.admit is not None
    r.after_turn = r.after_env = r.admit = r.faults = None
    got = _finished(job, r)
    r.start(0)
    job.env.run()
    assert calls == [] and len(submitted) == 3 and got[0].response_tokens == 72
    assert (r.after_turn, r.after_env, r.admit, r.faults) == (None, None, None, None)


@pytest.mark.parametrize("turns", [TURNS, Turns.of(TURNS)], ids=["tuple", "columns"])
def test_a_rollout_runs_the_same_turns_from_a_tuple_or_columns(turns):
    """A rollout keeps its turns as columns (`Turns`) whatever it is given: each turn's
    request, context and environment step are those of the tuple of `Turn`."""
    job, submitted = _job()
    r = Rollout(job, 1, 100, 72, turns)
    done = _finished(job, r)
    assert r.turns == TURNS and isinstance(r.turns, Turns)
    assert [r.context_at(k) for k in range(4)] == [100, 137, 162, 172]
    r.start(0)
    job.env.run()
    assert [(q.prompt_tokens, q.output_tokens) for q in submitted] == \
        [(100, 30), (137, 20), (162, 10)]
    assert submitted[1].t_submit - submitted[0].t_finish == pytest.approx(2.0)
    assert submitted[2].t_submit - submitted[1].t_finish == pytest.approx(1.5)
    assert len(done) == 1 and done[0].response_tokens == 72 and done[0].observation_tokens == 12


def test_a_rollouts_turns_are_packed_a_row_a_turn():
    """What a turn reads (`Rollout._cols`): per turn its response and observation tokens
    (int32) and its environment step's seconds (the same float64), little-endian."""
    cols = Turns.of(TURNS)
    packed = pack_turns(cols.response_tokens, cols.obs_tokens, cols.env_s)
    assert packed == b"".join(struct.pack("<iid", t.response_tokens, t.obs_tokens, t.env_s)
                              for t in TURNS)
    job, _ = _job()
    assert Rollout(job, 1, 100, 72, TURNS)._cols == packed
    assert Rollout(job, 2, 100, 30)._cols == b""  # single-turn: the response length alone
    # An env_s that is not a short decimal is kept to the last bit.
    odd = Turns((3, 4), (0.1 + 0.2, 0.0), (5, 0))
    assert struct.unpack_from("<d", pack_turns(odd.response_tokens, odd.obs_tokens,
                                               odd.env_s), 8) == (0.1 + 0.2,)


def test_a_rollout_of_packed_only_turns_runs_as_one_of_columns():
    """Turns the workload keeps only packed (`Turns.from_packed`) give the same requests and
    sample, observation tokens included, without their columns ever being read."""
    cols = Turns.of(TURNS)
    runs = []
    for turns in (cols, Turns.from_packed(pack_turns(cols.response_tokens, cols.obs_tokens,
                                                     cols.env_s))):
        job, submitted = _job()
        r = Rollout(job, 1, 100, 72, turns)
        got = _finished(job, r)
        r.start(0)
        job.env.run()
        (s,) = got
        runs.append(([(q.prompt_tokens, q.output_tokens, q.t_submit, q.t_finish)
                      for q in submitted], s.response_tokens, s.observation_tokens,
                     s.last_response_tokens))
        if turns is not cols:
            assert turns._response_tokens is None and r.last == 2
    assert runs[0] == runs[1] and runs[0][2] == 12


@pytest.mark.parametrize("turn", [Turn(2**31, 1.0, 3), Turn(5, 1.0, -1)],
                         ids=["response past int32", "negative observation"])
def test_token_counts_outside_int32_are_refused_with_the_counts_named(turn):
    job, _ = _job()
    with pytest.raises(ValueError, match=r"token counts must lie in \[0, 2\*\*31\)"):
        Rollout(job, 1, 100, 72, (turn, Turn(10)))
