"""The live RL system: tokenizer, tasks, sandbox, engine batching and KV logic, GRPO maths,
the recorded phases of every mode, the async mode's live run, and a seconds-long
`rlsim validate` smoke run."""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")

from calibration.benchmarks import common, live_engine  # noqa: E402
from calibration.live import grpo, tasks  # noqa: E402
from calibration.live.engine import Engine, GenRequest  # noqa: E402
from calibration.live.model import LMConfig, TinyLM  # noqa: E402
from calibration.live.sandbox import SandboxEnv  # noqa: E402
from calibration.live.tokenizer import BOS, EOS, Tokenizer  # noqa: E402
from rlsim.trace import CONTROLLER, Recorder  # noqa: E402

TOK = Tokenizer()
SMALL = LMConfig(vocab=TOK.vocab_size, hidden=32, layers=2, heads=2, ffn=64, max_positions=64)


@pytest.fixture
def model() -> TinyLM:
    torch.manual_seed(0)
    return TinyLM(SMALL)


def test_tokenizer_round_trip_and_unknown_character() -> None:
    ids = TOK.encode("get:q,x>$cat q\n")
    assert TOK.decode([*ids, EOS, 5]) == "get:q,x>$cat q\n"
    with pytest.raises(ValueError, match="'A'"):
        TOK.encode("A")


def test_tasks_are_deterministic_and_scored_by_exact_match() -> None:
    a, b = tasks.draw_batch(3, 1, 20), tasks.draw_batch(3, 1, 20)
    assert a == b
    for p in a:
        assert tasks.score(p.answer, p.answer) == 1.0
        assert tasks.score(p.answer, p.answer + "x") == 0.0
        if p.kind == "ct":
            lo, hi = p.prompt[3:-1].split(",")
            assert p.answer[0] == lo and p.answer[-1] == hi
            assert all(ord(y) - ord(x) == 1 for x, y in zip(p.answer, p.answer[1:], strict=False))
        if p.kind == "get":
            assert p.answer == tasks.count(next(iter(p.files.values())))
    assert tasks.count("c,f") == "cdef"


def test_sandbox_cat_reads_the_trajectorys_file_and_refuses_other_commands() -> None:
    env = SandboxEnv()
    try:
        obs, secs = env.step(1, {"q": "abc"}, "$cat q")
        assert obs == "=abc\n" and secs > 0
        assert env.step(1, {"q": "abc"}, "$cat z")[0] == "=!\n"  # no such file
        assert env.step(1, {"q": "abc"}, "$rm -rf q")[0] == "=?\n"  # never executed
        assert env.step(1, {"q": "abc"}, "$cat q")[0] == "=abc\n"
        assert env.step(2, {"q": "xyz"}, "$cat q")[0] == "=xyz\n"  # its own sandbox
        assert env.step(1, {"q": "xyz"}, "$cat q")[0] == "=abc\n"  # files made at reset
    finally:
        env.close()


def _greedy_reference(model: TinyLM, prompt: list[int], n: int) -> list[int]:
    ids, out = list(prompt), []
    for _ in range(n):
        tok = int(model(torch.tensor([ids]))[0, -1].argmax())
        out.append(tok)
        ids.append(tok)
        if tok == EOS:
            break
    return out


def test_engine_matches_the_full_forward_under_continuous_batching(model: TinyLM) -> None:
    # Prompts of different lengths, more requests than slots: admissions happen while
    # others decode, and finished slots are refilled by moving KV, yet every output equals
    # greedy decoding with the full (cache-free) forward pass.
    engine = Engine(model, max_running=3, max_len=40, temperature=0)
    reqs = [GenRequest(i, [BOS, *range(3, 3 + 2 + i % 4)], max_new=4 + i % 5) for i in range(8)]
    for r in reqs:
        engine.submit(r)
    engine.run()
    for r in reqs:
        assert r.output == _greedy_reference(model, r.prompt, r.max_new)


def test_engine_admission_is_fcfs_under_the_cap(model: TinyLM) -> None:
    engine = Engine(model, max_running=2, max_len=30, temperature=0, stop_on_eos=False)
    done: list[int] = []
    reqs = [GenRequest(i, [BOS, 5, 6], max_new=2 + i, on_done=lambda r: done.append(r.rid))
            for i in range(5)]
    for r in reqs:
        engine.submit(r)
    engine.step()
    assert [r.rid for r in engine.running] == [0, 1] and len(engine.waiting) == 3
    # First iteration prefills both and samples their first tokens.
    assert [len(r.output) for r in reqs[:2]] == [1, 1]
    engine.run()
    assert done == [0, 1, 2, 3, 4]
    assert engine.max_batch_seen == 2
    assert [len(r.output) for r in reqs] == [2, 3, 4, 5, 6]  # stop at max_new exactly
    # Request i needs 2 + i iterations from its admission. 0 ends after iteration 2 and 1
    # after 3; 2 joins at 3 (ends after 6), 3 at 4 (ends after 8), 4 at 7 (ends after 12).
    assert engine.iterations == 12


def test_engine_stops_on_eos_and_on_context_length(model: TinyLM) -> None:
    with torch.no_grad():
        model.lm_head.zero_()
        model.lm_head[EOS] = 1.0  # every logit but EOS's is 0: EOS wins greedily
        model.norm.fill_(1.0)
    engine = Engine(model, max_running=2, max_len=10, temperature=0)
    r = GenRequest(0, [BOS, 5, 6], max_new=5)
    engine.submit(r)
    engine.run()
    assert r.output[-1] == EOS and len(r.output) <= 5
    engine2 = Engine(model, max_running=1, max_len=6, temperature=0, stop_on_eos=False)
    r2 = GenRequest(1, [BOS, 5, 6, 7], max_new=50)
    engine2.submit(r2)
    engine2.run()
    assert r2.context == 6  # the cache holds max_len positions


def test_engine_abort_and_resume_matches_an_uninterrupted_run(model: TinyLM) -> None:
    # The async mode's partial rollout: abort everything at an iteration boundary, resubmit
    # each request as prompt + partial output (KV recomputed by prefill) for what is left.
    # With the same weights, the stitched output equals greedy decoding without the abort.
    engine = Engine(model, max_running=2, max_len=40, temperature=0, stop_on_eos=False)
    reqs = [GenRequest(i, [BOS, *range(3, 5 + i)], max_new=8) for i in range(3)]
    for r in reqs:
        engine.submit(r)
    for _ in range(3):
        engine.step()
    aborted = engine.abort()
    assert engine.idle and [r.rid for r in aborted] == [2, 0, 1]  # waiting, then running
    assert [len(r.output) for r in aborted] == [0, 3, 3]
    resumed = [GenRequest(r.rid, r.prompt + r.output, r.max_new - len(r.output))
               for r in aborted]
    for r in resumed:
        engine.submit(r)
    engine.run()
    for old, new in zip(aborted, resumed, strict=True):
        assert old.output + new.output == _greedy_reference(model, old.prompt, old.max_new)


def test_engine_rejects_prompts_that_do_not_fit(model: TinyLM) -> None:
    engine = Engine(model, max_running=1, max_len=8)
    with pytest.raises(ValueError, match="prompt of 8 tokens"):
        engine.submit(GenRequest(0, [BOS] * 8, max_new=1))


def test_grpo_advantages_by_hand() -> None:
    adv = grpo.advantages([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], group=4)
    # group 1: mean 0.75, std sqrt(0.1875); group 2: all equal -> 0
    s = math.sqrt(0.1875)
    assert adv[:4] == pytest.approx([0.25 / s, -0.75 / s, 0.25 / s, 0.25 / s], rel=1e-5)
    assert adv[4:] == [0.0] * 4
    with pytest.raises(ValueError):
        grpo.advantages([1.0, 0.0, 1.0], group=2)


def test_clipped_loss_by_hand() -> None:
    # Two tokens of one sample with A = +1 and two of another with A = -1:
    # ratio 1.5 (clipped to 1.2 for A>0), 0.5 (A>0: min(0.5, 0.8) = 0.5),
    # ratio 1.5 with A<0: min(-1.5, -1.2) = -1.5, ratio 0.5 with A<0: min(-0.5, -0.8) = -0.8.
    old = torch.zeros(2, 2)
    logp = torch.log(torch.tensor([[1.5, 0.5], [1.5, 0.5]]))
    adv = torch.tensor([1.0, -1.0])
    mask = torch.ones(2, 2)
    loss, n = grpo.clipped_loss(logp, old, adv, mask, clip=0.2)
    assert float(n) == 4
    assert float(loss) == pytest.approx(-(1.2 + 0.5 - 1.5 - 0.8))
    mask[1, 1] = 0  # masked tokens do not count
    loss, n = grpo.clipped_loss(logp, old, adv, mask, clip=0.2)
    assert float(loss) == pytest.approx(-(1.2 + 0.5 - 1.5)) and float(n) == 3


def test_micro_batches_cover_every_trajectory_once() -> None:
    trajs = [grpo.Trajectory([1] * n, [0] * n) for n in (5, 30, 7, 30, 12, 2)]
    groups = grpo.micro_batches(trajs, max_tokens=60)
    assert sorted(i for g in groups for i in g) == list(range(6))
    for g in groups:
        assert len(g) * max(len(trajs[i].ids) for i in g) <= 60


def test_packed_rows_give_each_trajectory_its_own_log_probs(model: TinyLM) -> None:
    # Sequence packing must be invisible: every trajectory's log-probs equal those of a
    # forward over it alone, whatever shares its row.
    trajs = [grpo.Trajectory([BOS, *range(3, 3 + n)], [0] + [1] * n) for n in (9, 3, 5, 2, 7)]
    batches = grpo.pack(trajs, max_tokens=20)
    assert sorted(i for b in batches for i, _, _ in b.place) == list(range(5))
    assert sum(b.ids.shape[0] for b in batches) < len(trajs)  # some rows hold several
    trainer = grpo.Trainer(model, lr=1e-3, micro_batch_tokens=20)
    trainer.old_logprobs(trajs)
    for t in trajs:
        alone = model.token_logprobs(torch.tensor([t.ids]))[0]
        assert t.old_logprobs is not None
        torch.testing.assert_close(t.old_logprobs, alone, rtol=1e-4, atol=1e-5)


def test_trainer_step_changes_the_policy_toward_positive_advantage(model: TinyLM) -> None:
    trainer = grpo.Trainer(model, lr=1e-2)
    good = grpo.Trajectory([BOS, 5, 6, 7], [0, 0, 1, 1], advantage=1.0)
    bad = grpo.Trajectory([BOS, 5, 8, 9], [0, 0, 1, 1], advantage=-1.0)
    trainer.old_logprobs([good, bad])
    before = model.token_logprobs(torch.tensor([good.ids]))[0, 1:].sum()
    for _ in range(3):
        trainer.old_logprobs([good, bad])
        trainer.update([good, bad])
    after = model.token_logprobs(torch.tensor([good.ids]))[0, 1:].sum()
    assert after > before


# ---------------------------------------------------------------------- whole job
@pytest.fixture
def tiny_calibration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny grids and budgets so a validation smoke run takes seconds."""
    monkeypatch.setattr(common, "QUICK", common.Budget(warmup=0, min_time_s=0.0, min_reps=1,
                                                       max_reps=1))
    monkeypatch.setattr(common, "RETRIES", 0)
    grids = {
        "gemm": [{"m": m, "n": n, "k": k} for m in (1, 8, 32)
                 for n, k in ((96, 32), (32, 32), (128, 32), (32, 64))],
        "elementwise": [{"size_bytes": s, "op": op} for s in (4096, 65536)
                        for op in ("silu_mul", "add", "rmsnorm")],
        "memcpy": [{"size_bytes": 1 << 16}, {"size_bytes": 1 << 20}],
        "attention_decode": [{"batch": b, "context": c} for b in (1, 4) for c in (8, 32)],
        "attention_prefill": [{"tokens": t} for t in (4, 16, 32)],
        "layer_decode": [{"batch": b, "context": c} for b in (1, 4) for c in (8, 32)],
        "layer_prefill": [{"tokens": t} for t in (4, 16, 32)],
        "engine_decode": [{"batch": b, "context": c} for b in (1, 4) for c in (8, 16)],
        "engine_prefill": [{"tokens": t} for t in (4, 16)],
        "engine_mixed": [{"batch": 2, "context": 8, "prefills": n, "tokens": 4} for n in (1, 2)],
        "train_step": [{"tokens": 64, "seq_tokens": 16}, {"tokens": 128, "seq_tokens": 32}],
        "forward": [{"tokens": 64, "seq_tokens": 16}, {"tokens": 128, "seq_tokens": 32}],
    }
    monkeypatch.setattr(common, "GRID_OVERRIDE", grids)
    monkeypatch.setattr(live_engine, "TRACE_REQUESTS_QUICK", 6)
    from calibration.live import weightsync
    monkeypatch.setattr(weightsync, "REPEATS", 3)
    monkeypatch.setattr(weightsync, "IDLE_S", 0.01)
    from calibration.live import driver
    monkeypatch.setattr(driver, "REPEATS", 3)
    monkeypatch.setattr(driver, "WARMUP", 1)


def test_validate_smoke_produces_the_table(tmp_path: Path, tiny_calibration: None) -> None:
    from calibration.live.report import markdown, table
    from calibration.live.runner import LiveConfig
    from calibration.live.validate import Plan, validate

    live = LiveConfig(steps=2, prompts_per_step=3, samples_per_prompt=2, max_running=4,
                      max_response_len=6, max_len=40, reward_workers=1, env_workers=2,
                      lm=replace(SMALL, max_positions=40))
    p = Plan(("sync", "one_off", "async"), quick=True, repeats=1, live=live, sft_steps=2,
             sft_batch=4)
    v = validate(p, tmp_path, progress=lambda line: None)
    data = v.as_json()
    for mode in ("sync", "one_off", "async"):
        r = data["modes"][mode]
        assert r["live_step_s"] > 0 and r["sim_step_s"] > 0
        assert set(r["phases"]) == {"gen", "reward", "ref", "train", "weight_sync"}
        e = r["engine_iterations"]
        assert e["iterations"] > 0 and e["live_s"] > 0 and e["priced_s"] > 0
        run = tmp_path / f"{mode}-0"
        assert (run / "sim" / "summary.json").exists()
        # async records every launched batch: steps + alpha of them
        batches = 3 if mode == "async" else 2
        assert len((run / "rollouts.jsonl").read_text().splitlines()) == batches * 3
    a = data["modes"]["async"]
    assert a["phases"]["reward"]["error"] is None  # scored during generation: no span
    assert a["staleness_max"] <= 1 and a["sim_staleness_max"] <= 1
    assert a["sim_outcomes_each"][0]["stale"] == 0
    scen = (tmp_path / "async-0" / "scenario.yaml").read_text()
    assert "name: async" in scen and "alpha: 1" in scen and "partial_rollout: true" in scen
    assert "speedup_one_off" in data and "speedup_async" in data
    assert data["placement"]  # which core each role ran on, or "not pinned"
    for mode in ("sync", "one_off", "async"):
        r = data["modes"][mode]
        assert r["live_step_s_min"] <= r["live_step_s"] <= r["live_step_s_max"]
        assert r["whole_run"]["live_step_s"] > 0 and r["whole_run"]["sim_step_s"] > 0
        live_json = json.loads((tmp_path / f"{mode}-0" / "live.json").read_text())
        assert len(live_json["iterations"]) == data["modes"][mode]["engine_iterations"][
            "iterations"]
    # The link's latency comes from the weight-sync microbenchmark, so a simulated sync
    # costs what the job's own sync mechanism measured (the bandwidth term alone was
    # 10-40x too cheap).
    sync_s = json.loads((tmp_path / "weight_sync.json").read_text())["sync_s"]
    assert len(sync_s) == 3 and all(x > 0 for x in sync_s)
    for mode in ("sync", "one_off"):
        ws = data["modes"][mode]["phases"]["weight_sync"]
        assert ws["sim_s"] == pytest.approx(max(statistics.median(sync_s), 1e-5), rel=0.02)
    # The engines' per-request overhead comes from the driver microbenchmark, averaged over
    # each run's own request events.
    from calibration.live.driver import DriverCosts

    costs = json.loads((tmp_path / "driver.json").read_text())
    assert all(x > 0 for x in costs.values())
    for mode in ("sync", "one_off", "async"):
        run = tmp_path / f"{mode}-0"
        groups = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
        samples = [smp for g in groups for smp in g["samples"]]
        env_steps = sum(len(smp["turns"]) - 1 for smp in samples)
        scen_data = yaml.safe_load((run / "scenario.yaml").read_text())
        assert scen_data["rollout"]["request_overhead"] == pytest.approx(
            DriverCosts(**costs).request_overhead_s(len(samples), env_steps, mode == "async"))
    text = table(data)
    assert "one_off" in text and "weight_sync" in text
    md = markdown(v, 1.0)
    assert "| sync | gen |" in md and "| async | step |" in md.replace("**", "")
    assert "reward" in md
    json.dumps(data)  # the --json output is serialisable


def test_validate_interleaves_calibration_passes_with_the_live_repeats(
        tmp_path: Path, tiny_calibration: None) -> None:
    """The first pass measures every family; each later repeat is preceded by a pass of
    the job's engine and trainer; the profile is fitted after the last live run, on the
    points' medians over the passes."""
    from calibration.live.runner import LiveConfig
    from calibration.live.validate import REPEATED_FAMILIES, Plan, validate
    from calibration.measurements import MeasurementSet, median_of_passes
    from calibration.run import FAMILIES

    live = LiveConfig(steps=2, prompts_per_step=2, samples_per_prompt=2, max_running=4,
                      max_response_len=4, max_len=40, reward_workers=1, env_workers=1,
                      lm=replace(SMALL, max_positions=40))
    p = Plan(("sync",), quick=True, repeats=2, live=live, sft_steps=2, sft_batch=4)
    lines: list[str] = []
    v = validate(p, tmp_path, progress=lines.append)
    passes = [MeasurementSet.model_validate_json(
        (tmp_path / f"measurements-pass-{i}.json").read_text()) for i in (1, 2)]
    repeated = {b for f in REPEATED_FAMILIES for b in FAMILIES[f].BENCHES}
    assert {m.bench for m in passes[0].measurements} > repeated
    assert {m.bench for m in passes[1].measurements} == repeated
    used = MeasurementSet.model_validate_json((tmp_path / "measurements.json").read_text())
    assert used == median_of_passes(passes)
    assert v.as_json()["calibration_passes"] == 2
    # Order: pass 1, live repeat 0, pass 2, live repeat 1, then the fit.
    first_live = next(i for i, s in enumerate(lines) if s.startswith("sync step 0"))
    second_pass = next(i for i, s in enumerate(lines) if i > first_live
                       and s.startswith("calibrate: engine_decode"))
    second_live = next(i for i, s in enumerate(lines) if i > second_pass
                       and s.startswith("sync step 0"))
    fitted = next(i for i, s in enumerate(lines) if s.startswith("calibrate: profile"))
    assert first_live < second_pass < second_live < fitted
    assert "from 2 pass(es)" in lines[fitted]
    assert len(v.runs["sync"]) == 2
    from calibration.live.report import markdown
    assert "calibrated in 2 pass(es)" in markdown(v, 1.0)


def test_frozen_heap_freezes_for_the_block_and_leaves_a_callers_freeze_alone() -> None:
    import gc

    from calibration.live.runner import frozen_heap

    assert gc.get_freeze_count() == 0
    with frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with frozen_heap():  # nested: already frozen, nothing changes
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0


def test_async_live_run_trains_every_sample_once_within_staleness() -> None:
    """The live async mode (alpha = 1): batches 0 and 1 start at once, batch n + 2 after step
    n's weight sync, each step trains complete groups of samples that started at most one
    version earlier, no group twice, and records the same spans as the simulator."""
    from calibration.live.runner import LiveConfig, run_live
    from calibration.live.scenario import policy_dict, rollouts_lines
    from rlsim.trace import CONTROLLER

    torch.manual_seed(0)
    lm = replace(SMALL, max_positions=40)
    cfg = LiveConfig(mode="async", steps=3, prompts_per_step=3, samples_per_prompt=2,
                     max_running=4, max_response_len=6, max_len=40, reward_workers=1,
                     env_workers=1, lm=lm)
    result = run_live(cfg, TinyLM(lm).state_dict())
    trained = [key for step in result.trained for key in step]
    assert len(trained) == len(set(trained)) == cfg.steps * cfg.prompts_per_step
    for step, keys in enumerate(result.trained):
        assert all(b <= step + cfg.alpha for b, _ in keys)  # never a batch not yet launched
    assert result.stats[0].staleness == 0  # batch 0 ran on the first weights
    assert all(0 <= s.staleness <= 1 and s.samples == 6 for s in result.stats)
    spans = [s for s in result.recorder.spans if s.track == CONTROLLER]
    for name in ("gen", "ref", "train", "weight_sync", "step"):
        assert [s.attrs["step"] for s in spans if s.name == name] == [0, 1, 2]
    assert not any(s.name == "reward" for s in spans)  # scored as samples finish
    for s in spans:
        if s.name == "train":
            assert s.attrs["staleness_max"] <= 1
    # Every launched batch (steps + alpha) is recorded in full, batch d at step d.
    assert len(result.rollouts) == len(result.problems) == cfg.steps + cfg.alpha
    assert all(len(b) == 6 and all(s.turns for s in b) for b in result.rollouts)
    lines = rollouts_lines(result)
    assert [line["step"] for line in lines] == [d for d in range(4) for _ in range(3)]
    assert result.iterations and result.gen_iterations >= len(result.iterations)
    assert policy_dict(result) == {"name": "async", "placement": "disaggregated",
                                   "asynchronous": {"alpha": 1, "partial_rollout": True,
                                                    "over_age": "reissue"}}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs sched_setaffinity and two cores")
def test_live_run_pins_each_role_to_its_core_and_restores_the_caller() -> None:
    from calibration.live.cores import placement
    from calibration.live.runner import LiveConfig, run_live

    before = os.sched_getaffinity(0)
    place = placement()
    assert place is not None
    torch.manual_seed(0)
    lm = replace(SMALL, max_positions=40)
    cfg = LiveConfig(mode="sync", steps=1, prompts_per_step=2, samples_per_prompt=2,
                     max_running=4, max_response_len=6, max_len=40, reward_workers=1,
                     env_workers=1, lm=lm)
    result = run_live(cfg, TinyLM(lm).state_dict())
    assert os.sched_getaffinity(0) == before
    assert set(result.cores["trainer"]) == place.trainer
    assert set(result.cores["rollout"]) == place.rollout
    assert set(result.cores["rollout_helpers"]) == place.helpers  # environment workers
    assert set(result.cores["reward_pool"]) == place.helpers
    if hasattr(os, "SCHED_IDLE"):
        # Sharing the devices' cores, the helpers run only in the time they leave idle.
        assert result.cores["rollout_helpers_idle"] == [int(place.helpers_idle)] * 1
    loose = run_live(replace(cfg, pin=False), TinyLM(lm).state_dict())
    assert set(loose.cores["rollout"]) == before


def _recorder(step_s: list[float]) -> Recorder:
    rec = Recorder()
    t = 0.0
    for step, dt in enumerate(step_s):
        rec.span(CONTROLLER, "gen", t, t + dt / 2, step=step)
        rec.span(CONTROLLER, "step", t, t + dt, step=step)
        t += dt
    return rec


def test_phase_means_leave_out_the_warm_up_steps_when_asked() -> None:
    from calibration.live.validate import phase_means

    rec = _recorder([5.0, 1.0, 2.0])
    assert phase_means(rec)["step"] == pytest.approx(8.0 / 3)
    assert phase_means(rec, 1) == pytest.approx({"step": 1.5, "gen": 0.75})
    assert phase_means(_recorder([5.0]), 1)["step"] == 5.0  # nothing left: the whole run


def test_repeats_are_compared_by_their_medians_with_the_spread() -> None:
    from calibration.live.validate import ModeRun, Validation, plan

    def run(live_step: float, sim_step: float) -> ModeRun:
        return ModeRun({"step": live_step, "gen": live_step / 2},
                       {"step": sim_step, "gen": sim_step / 2}, [0.5], "x",
                       live_whole_step_s=live_step * 1.1, sim_whole_step_s=sim_step)

    v = Validation(plan(("sync",), True), "profile.json")
    # One repeat disturbed by a neighbour (3.0 s): it moves a mean by 40%, not the median.
    v.runs["sync"] = [run(1.0, 0.95), run(3.0, 0.97), run(1.1, 0.96)]
    r = v.as_json()["modes"]["sync"]
    assert r["live_step_s"] == 1.1 and r["sim_step_s"] == 0.96
    assert r["error"] == pytest.approx(0.96 / 1.1 - 1)
    assert (r["live_step_s_min"], r["live_step_s_max"]) == (1.0, 3.0)
    assert r["phases"]["gen"]["live_s"] == 0.55
    assert (r["phases"]["gen"]["live_min_s"], r["phases"]["gen"]["live_max_s"]) == (0.5, 1.5)
    assert r["whole_run"]["live_step_s"] == pytest.approx(1.21)
    assert r["repeats"] == 3 and len(r["error_each"]) == 3


def test_one_engine_serves_every_step_with_the_results_of_a_fresh_one() -> None:
    # The rollout process keeps one engine (its KV cache allocated once, as a serving
    # engine's); whatever an earlier step left in the cache must not change a later step.
    from calibration.live.rollout import Generator

    torch.manual_seed(0)
    lm = replace(SMALL, max_positions=40)
    model = TinyLM(lm)
    model.requires_grad_(False)
    problems = tasks.draw_batch(0, 1, 4)

    def run(gen: Generator, seed: int) -> list[list[list[int]]]:
        return [[t.response for t in s.turns] for s in gen.generate(problems, 2, seed=seed)]

    kept = Generator(model, TOK, 4, 40, 6, 2, 1)
    fresh = Generator(model, TOK, 4, 40, 6, 2, 1)
    try:
        engine = kept.engine
        run(kept, seed=1)  # leaves its sequences' KV behind in the cache
        assert kept.engine is engine
        assert run(kept, seed=7) == run(fresh, seed=7)
    finally:
        kept.close()
        fresh.close()
