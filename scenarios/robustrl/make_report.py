"""Write reports/robustrl.md: role-based recovery (RobustRL) against the whole-job restart
it is compared with, in RobustRL's setting, next to the paper's ETTR (> 80% against 60%).

Simulates the two scenarios in this folder (the same job and faults; `recovery.scope: job`
against `role`) at 256 GPUs as the abstract states and at 128 as its section 7.2 does,
under `async` (alpha 1, the closest rlsim policy to the paper's async mode) and, for
comparison, `one_off` (one-step off-policy: a pipeline with the same staleness), with three
seeds each. The faults follow the paper's injection, one trainer fault at a uniform instant
within every tenth of the steps: rlsim injects faults at wall-clock times, so each
window's instant is placed in the fault-free run of the baseline (`window_times`), and both
schemes see the same times. Each run's ETTR is computed two ways (`ettr`): the paper's
(rollout and training both count, re-executed work included; while the trainer restarts
alone, the rollouts' share #Rollout / (#Rollout + #Trainer) counts) and rlsim's own (the
kept steps' time over the run's). The paper's facts and what could not be read of it:
docs/research/robustrl.md. Run: `make robustrl-report` (about a minute on 2 cores).
"""

from __future__ import annotations

import os
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "reports" / "robustrl.md"
JOB, ROLE = "qwen3-8b-math-256-job", "qwen3-8b-math-256-role"
SEEDS = (0, 1, 2)
WINDOWS = 10  # one fault per 10% of the steps [P-text §7.1]
# The setups: (label, overrides). 256 GPUs is the abstract's cluster; §7.2 runs its
# end-to-end comparison on 128 (trainer and rollout still equal: 8 + 8 machines).
SETUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("256 GPUs, async", ()),
    ("128 GPUs, async", ("pools.0.nodes=8", "pools.1.nodes=8")),
    ("256 GPUs, one_off", ("policy.name=one_off",)),
)
NO_FAULTS = "faults.trainer=[]"
PAPER = {"role": 0.80, "job": 0.60}  # ETTR: "> 80%" and 60% [P-text abstract, §1, §10]

Job = tuple[str, tuple[str, ...]]


def window_times(step_ends: list[float], seed: int, windows: int = WINDOWS) -> list[float]:
    """One fault time per window of steps: window w covers steps w*n/windows to
    (w+1)*n/windows - 1 of a run whose steps end at `step_ends` (n of them), and its
    fault falls at a uniform instant within it (from the seed's own stream)."""
    n = len(step_ends)
    if n % windows:
        raise ValueError(f"{n} steps do not split into {windows} windows")
    per = n // windows
    u = np.random.default_rng([seed, 0x10B057]).random(windows)
    out = []
    for w in range(windows):
        t0 = step_ends[w * per - 1] if w else 0.0
        t1 = step_ends[(w + 1) * per - 1]
        out.append(round(t0 + float(u[w]) * (t1 - t0), 1))
    return out


def ettr(sim_time_s: float, job_down_s: float, role_down_s: float, rollout_gpus: int,
         train_gpus: int) -> float:
    """The paper's ETTR (§7.2): every second the job runs counts (rollout and training
    alike, work later re-executed included), but for a whole-job restart (nothing runs)
    and a trainer restarted alone, during which the running rollouts count for their share
    #Rollout / (#Rollout + #Trainer) of the GPUs."""
    if sim_time_s <= 0:
        return 0.0
    trainer_share = train_gpus / (rollout_gpus + train_gpus)
    return 1.0 - (job_down_s + role_down_s * trainer_share) / sim_time_s


def simulate(job: Job) -> dict[str, Any]:
    """One run's figures: the summary's, the step ends, and the downtime of its restarts
    (whole job, and the trainer alone) for the paper's ETTR."""
    from rlsim.api import simulate_file
    from rlsim.trace import CONTROLLER

    name, overrides = job
    result = simulate_file(HERE / f"{name}.yaml", list(overrides))
    s = result.summary
    spans = [x for x in result.recorder.spans if x.track == CONTROLLER]
    ends = sorted(x.t1 for x in spans if x.name == "step")
    down = {"job": 0.0, "role": 0.0}
    count = {"job": 0, "role": 0}
    for x in spans:
        if x.name == "recovery":
            kind = "role" if x.attrs.get("scope") == "role" else "job"
            down[kind] += x.t1 - x.t0
            count[kind] += 1
    place = result.scenario.pools
    gpus = {p.name: p.gpus for p in place}
    trainer = s["faults"]["by_kind"].get("trainer", {})
    return {
        "sim_time_s": float(s["sim_time_s"]),
        "steps": int(s["steps"]),
        "step_ends": ends if not overrides or NO_FAULTS in overrides else [],
        "goodput": float(s["whole_run"]["goodput_samples_per_s"]),
        "ettr_rlsim": float(s["whole_run"]["effective_training_time_ratio"]),
        "ettr_paper": ettr(float(s["sim_time_s"]), down["job"], down["role"],
                           gpus["rollout"], gpus["train"]),
        "job_down_s": down["job"],
        "role_down_s": down["role"],
        "faults": int(trainer.get("injected", 0)),
        "recovery_s": float(trainer.get("recovery_s", {}).get("mean", 0.0)),
        "rollbacks": count["job"],
        "role_restarts": count["role"],
        "lost_work_gpu_s": float(s["faults"]["lost_work_gpu_s"]),
        "step_time_s": float(s["whole_run"]["step_time_s"]["mean"]),
        "stale": int((s["attempts"] or {}).get("stale", 0)),
        "train_util": float(s["whole_run"]["gpu_util"].get("train", 0.0)),
    }


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else 0.0


def _times_override(times: list[float]) -> str:
    return "faults.trainer=[{times: [" + ", ".join(f"{t} s" for t in times) + "]}]"


def main() -> None:
    workers = os.cpu_count() or 2
    free_jobs = {(label, seed, name): (name, (*over, f"seed={seed}", NO_FAULTS))
                 for label, over in SETUPS for seed in SEEDS for name in (JOB, ROLE)}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        keys = list(free_jobs)
        free = dict(zip(keys, pool.map(simulate, [free_jobs[k] for k in keys]), strict=True))
        times = {(label, seed): window_times(free[(label, seed, JOB)]["step_ends"], seed)
                 for label, _ in SETUPS for seed in SEEDS}
        fault_jobs = {(label, seed, name): (name, (*over, f"seed={seed}",
                                                   _times_override(times[(label, seed)])))
                      for label, over in SETUPS for seed in SEEDS for name in (JOB, ROLE)}
        keys = list(fault_jobs)
        runs = dict(zip(keys, pool.map(simulate, [fault_jobs[k] for k in keys]),
                        strict=True))

    def avg(label: str, name: str, key: str, src: dict[Any, Any] | None = None) -> float:
        return _mean([float((src or runs)[(label, seed, name)][key]) for seed in SEEDS])

    lines = _header(times[(SETUPS[0][0], 0)])
    lines += _headline(avg, free)
    lines += _per_setup(avg, free)
    lines += _discussion(avg, free)
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}")


def _header(seed0_times: list[float]) -> list[str]:
    return [
        "# RobustRL reproduction (role-based recovery against a whole-job restart)",
        "",
        "Generated by `make robustrl-report` (scenarios/robustrl/make_report.py) from "
        "scenarios/robustrl; what the paper states and what could not be read of it: "
        "docs/research/robustrl.md; the model: docs/faults.md. Every figure is the mean "
        f"over seeds {', '.join(map(str, SEEDS))} (the workload and the fault instants "
        "change with the seed; both schemes see the same ones).",
        "",
        "## The setting",
        "",
        "Tags: [P-text] stated in the text of the paper (OSDI'26); [S] secondary (a "
        "paper-wiki reading of a figure whose values the text does not give); [D] "
        "derived; [chosen] rlsim's choice where the paper is silent.",
        "",
        "| what | rlsim | source |",
        "|---|---|---|",
        "| cluster | 256 H20 (32 machines x 8), half rollout, half trainer | [P-text] "
        "abstract, §7.1 (equal trainer and rollout GPUs); §7.2 says its end-to-end runs "
        "are on **128**: shown below as well |",
        "| model, task | Qwen3-8B GRPO on DAPO-Math-17K, rule reward | [P-text §7.1] |",
        "| batch, steps | 64 prompts x 8 responses, 100 steps | [P-text §7.1] |",
        "| rollout | vLLM-like engines at TP 8, one per machine (16) | [P-text §7.1] |",
        "| trainer | FSDP2 on its 128 GPUs | [P-text §7.1] |",
        "| responses | lognormal, median 8,000 tokens, sigma 0.8 (mean 11k), cap 36,864 "
        "(Qwen3-8B's 40,960 context) | [chosen]: not stated; the paper caps text at "
        "65,536 |",
        "| policy | `async`, alpha 1, partial rollout (verl's fully-async recipe, the "
        "paper's async mode: standalone trainer and rollouts, a one-step warm-up) | "
        "[chosen]: the paper runs async and semi-sync; semi-sync (hybrid workers training "
        "at 50% of prompts) has no rlsim counterpart; `one_off` shown as a second "
        "reading |",
        "| faults | one trainer fault at a uniform instant in every tenth of the steps (10 "
        "per run) | [P-text §7.1]; placed in wall-clock time from the fault-free "
        f"baseline's steps (seed 0, 256 GPUs: {', '.join(f'{t:.0f}' for t in seed0_times)}"
        " s) [D] |",
        "| detection | 10 s, both schemes | [chosen]: ByteRobust's GPU-fault interval "
        "(cited §7.3); the injected fault kind is not stated |",
        "| whole-job restart | 277.8 s, from a checkpoint every 5 steps | [S] 8B bar of "
        "Fig 15 (the text: \"over 300 s\" [P-text §7.3]); interval [P-text §7.2, Fig 14's "
        "baseline] |",
        "| trainer-only restart | 173.0 s, from the per-step checkpoint | [S] 8B bar of Fig "
        "15; 1.5-1.7x faster [P-text §7.3] ([D] 277.8 / 173.0 = 1.61x) |",
        "| escalation | a fault in the first step after a (re)start, or a second in one "
        "step, restarts the job | [P-text §5.1.2] |",
        "| checkpoint write | 3 s blocking (GPU to host), both | [P-text §7.4.2] |",
        "| weight send | point to point at 4 x 200 Gb/s per machine | [P-text §5.2.1, "
        "§7.1] |",
        "| ETTR, paper's | rollout and training both count, re-executed work included; "
        "while the trainer restarts alone, #Rollout / (#Rollout + #Trainer) = 0.5 of it "
        "counts; a whole-job restart counts nothing | [P-text §7.2]; checkpoint writes "
        "counted as running [chosen] |",
        "| ETTR, rlsim's | the kept steps' time over the run's (summary "
        "`whole_run.effective_training_time_ratio`): work rolled back and restarts are "
        "lost | docs/faults.md |",
    ]


def _headline(avg: Any, free: dict[Any, Any]) -> list[str]:
    label = SETUPS[0][0]
    rows = [
        "",
        "## Headline: ETTR, role-based recovery against the whole-job restart",
        "",
        f"{label}, 10 trainer faults in 100 steps:",
        "",
        "| scheme | paper's ETTR | rlsim's ETTR (the paper's definition) | rlsim's ETTR "
        "(its own) | goodput vs fault-free | job time (h) |",
        "|---|---|---|---|---|---|",
    ]
    for name, scheme, key in ((ROLE, "role-based (RobustRL)", "role"),
                              (JOB, "whole-job restart (ByteRobust in place)", "job")):
        rows.append(
            f"| {scheme} | {'> 80%' if key == 'role' else '60%'} | "
            f"**{100 * avg(label, name, 'ettr_paper'):.1f}%** | "
            f"{100 * avg(label, name, 'ettr_rlsim'):.1f}% | "
            f"{100 * avg(label, name, 'goodput') / avg(label, name, 'goodput', free):.1f}% "
            f"| {avg(label, name, 'sim_time_s') / 3600:.2f} |")
    return rows


def _per_setup(avg: Any, free: dict[Any, Any]) -> list[str]:
    rows = [
        "",
        "## Every setup",
        "",
        "Faults are those that landed before the run ended (a run faster than the "
        "baseline's fault-free one may end before the last window's fault).",
        "",
        "| setup | scheme | ETTR (paper's definition) | ETTR (rlsim's) | goodput vs "
        "fault-free | job time (h) | fault-free (h) | overhead of the faults | faults | "
        "restarts of the job | trainer-alone restarts | mean recovery (s) | lost work "
        "(GPU-h) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, _ in SETUPS:
        for name, scheme in ((ROLE, "role"), (JOB, "job")):
            t = avg(label, name, "sim_time_s")
            t0 = avg(label, name, "sim_time_s", free)
            rows.append(
                f"| {label} | {scheme} | {100 * avg(label, name, 'ettr_paper'):.1f}% | "
                f"{100 * avg(label, name, 'ettr_rlsim'):.1f}% | "
                f"{100 * avg(label, name, 'goodput') / avg(label, name, 'goodput', free):.1f}%"
                f" | {t / 3600:.2f} | {t0 / 3600:.2f} | {100 * (t - t0) / t:.1f}% | "
                f"{avg(label, name, 'faults'):.1f} | {avg(label, name, 'rollbacks'):.1f} | "
                f"{avg(label, name, 'role_restarts'):.1f} | "
                f"{avg(label, name, 'recovery_s'):.0f} | "
                f"{avg(label, name, 'lost_work_gpu_s') / 3600:.1f} |")
    saved = [(label, (avg(label, JOB, "sim_time_s") - avg(label, ROLE, "sim_time_s")) / 3600,
              1 - avg(label, ROLE, "sim_time_s") / avg(label, JOB, "sim_time_s"))
             for label, _ in SETUPS]
    rows += [
        "",
        "Time saved by role-based recovery (paper, 8B-Math: 0.8-2.1 h over 100 steps and 10 "
        "faults, 8.4%-17.4% faster end to end [P-text §7.2, abstract]): " + "; ".join(
            f"{label} {h:.2f} h ({100 * f:.1f}% faster)" for label, h, f in saved) + ".",
        "",
        "Fault-free step time (the baseline's mean over the run): " + "; ".join(
            f"{label} {avg(label, JOB, 'step_time_s', free):.0f} s" for label, _ in SETUPS)
        + " (the paper gives none; [D] its 3 s checkpoint being '1% of' a step suggests "
        "about 5 min).",
    ]
    return rows


def _discussion(avg: Any, free: dict[Any, Any]) -> list[str]:
    label, small = SETUPS[0][0], SETUPS[1][0]

    def per_fault(lab: str, name: str) -> float:
        """Seconds each fault adds to the job, on average."""
        return (avg(lab, name, "sim_time_s") - avg(lab, name, "sim_time_s", free)) / WINDOWS

    step = avg(label, JOB, "step_time_s", free)
    t_job = avg(label, JOB, "sim_time_s")
    job_paper, job_own = avg(label, JOB, "ettr_paper"), avg(label, JOB, "ettr_rlsim")
    role_paper, role_own = avg(label, ROLE, "ettr_paper"), avg(label, ROLE, "ettr_rlsim")
    restart = avg(label, JOB, "job_down_s") / WINDOWS
    # the whole-job restart's downtime per fault that would give the paper's 60% by its
    # own definition, over this run's length
    needed = (1 - PAPER["job"]) * t_job / WINDOWS
    saved = [(per_fault(lab, JOB) - per_fault(lab, ROLE)) / 60 for lab, _ in SETUPS]
    stale_free = avg(small, ROLE, "stale", free)
    stale_role = avg(small, ROLE, "stale")
    return [
        "",
        "## Discussion",
        "",
        f"**The ordering and the size of the gap.** Role-based recovery keeps "
        f"{100 * role_own:.1f}% of the run effective by rlsim's own definition and the "
        f"whole-job restart {100 * job_own:.1f}%, a gap of "
        f"{100 * (role_own - job_own):.0f} points against the paper's 20 or more (> 80% "
        "against 60%); by the paper's definition the gap shrinks to "
        f"{100 * (role_paper - job_paper):.1f} points ({100 * role_paper:.1f}% against "
        f"{100 * job_paper:.1f}%). Each fault adds {per_fault(label, JOB):.0f} s to the "
        f"whole-job run (detection and the 277.8 s restart, {restart:.0f} s in all, then "
        "the steps since the last checkpoint, 2.5 on average at every 5, "
        f"{2.5 * step:.0f} s at this job's {step:.0f} s step, and the rollouts in "
        f"flight, all generated again) and {per_fault(label, ROLE):.0f} s to the "
        "role-based one: the trainer restart is 183 s, but the rollouts keep generating "
        "up to one step ahead and the trainer, idle "
        f"{100 * (1 - avg(label, ROLE, 'train_util', free)):.0f}% of the time in this "
        "rollout-bound job, catches up. The paper's savings for 8B-Math (0.8-2.1 h over "
        "10 faults) are 4.8 to 12.6 min per fault [D]; rlsim saves "
        f"{saved[0]:.1f} min per fault at {label} ("
        f"{'inside' if 4.8 <= saved[0] <= 12.6 else 'outside'} that range), and "
        + ", ".join(f"{m:.1f} min at {lab}" for (lab, _), m in zip(SETUPS[1:], saved[1:],
                                                                  strict=True))
        + ", whose longer steps make the work rolled back longer. The relative saving is "
        "larger than the paper's 8.4%-17.4% because this fault-free run is shorter than "
        "the paper's (whose job times are only plotted; [D] about 9.5-12 h if its "
        "8.4%-17.4% pair with its 0.8-2.1 h).",
        "",
        "**Why the paper's definition gives higher numbers here.** It counts re-executed "
        "work as effective, so a whole-job restart loses only the restart itself: "
        f"{restart:.0f} s per fault, {100 * WINDOWS * restart / t_job:.0f}% of this "
        f"{t_job / 3600:.1f} h run. To fall to 60% by that definition, each of the ten "
        f"restarts would have to stop the job for {needed / 60:.0f} min. The paper's "
        "restart bars are read at 256-403 s by a secondary source ([S]; the text: 'over "
        "300 s'), so its 60% is closer to rlsim's own definition, which also charges the "
        "work rolled back, than to the stated one; the text does not settle which "
        "stages and waits (the async trainer waiting for restarted rollouts, Fig 6b; "
        "checkpoint loading; scheduling) its ETTR counts as lost. RobustRL's '> 80%' is "
        f"likewise below rlsim's {100 * role_paper:.1f}%. Possible reasons, none of which "
        "the text settles: the rollout throughput drops at its trainer faults (Fig 17: a "
        "fault can land when the rollouts have already finished their step ahead and "
        "wait); in its semi-sync mode the hybrid rollouts on the trainer's machines stop "
        "with the trainer [D]; and a fault in the first step after a restart escalates to "
        "a whole restart. In rlsim's async runs the rollouts run on, and only a fault "
        "landing in step 0 escalates.",
        "",
        f"**128 GPUs** (§7.2's count). Steps are longer "
        f"({avg(small, JOB, 'step_time_s', free):.0f} s against {step:.0f} s), so a "
        "restart is a smaller share of the run: by the paper's definition "
        f"{100 * avg(small, ROLE, 'ettr_paper'):.1f}% against "
        f"{100 * avg(small, JOB, 'ettr_paper'):.1f}%, by rlsim's "
        f"{100 * avg(small, ROLE, 'ettr_rlsim'):.1f}% against "
        f"{100 * avg(small, JOB, 'ettr_rlsim'):.1f}%. "
        + ("Role-based recovery even finishes faster than the fault-free run: under "
           "async with alpha 1 a sample still in flight after two weight updates is "
           "dropped as stale, and a trainer pause means fewer updates during the long "
           f"responses ({stale_role:.0f} stale attempts a run against {stale_free:.0f} "
           "without faults). That is the policy's staleness rule at work, not recovery. "
           if per_fault(small, ROLE) < 0 else "")
        + "`one_off` (one batch ahead, the same staleness) keeps the ordering: "
        f"{100 * avg(SETUPS[2][0], ROLE, 'ettr_rlsim'):.1f}% against "
        f"{100 * avg(SETUPS[2][0], JOB, 'ettr_rlsim'):.1f}% by rlsim's definition.",
        "",
        "**What rlsim had to choose** (none of it stated): the response lengths and so the "
        "step time, which sets how large each restart is against the run; the fault kind "
        "and its detection (10 s for both); the baseline's checkpoint interval in the "
        "end-to-end runs (5 steps, from Fig 14's setup); the restart times per stage "
        "(secondary readings of Fig 15); and the policy (the paper's async mode as "
        "rlsim's `async`; its semi-sync has no counterpart).",
    ]


if __name__ == "__main__":
    main()
