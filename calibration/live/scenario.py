"""The rlsim scenario equivalent to a finished live run, derived, never tuned.

What the simulator is given: the live policy's architecture (`LMConfig.model_spec`), the job's
shape (batch, group size, engine cap, length caps, reward and environment workers, micro-
batch size), the workload the live run actually produced (`rollouts.jsonl`: per sample, each
turn's response tokens, environment seconds and observation tokens, and the reward
seconds), and the profile calibrated on this machine. Nothing here reads a live phase time;
the environment and reward seconds are per-call latencies the job measured, replayed.
Derivations that are not a copy of a live setting:
- each of the two processes is one device, so the rollout and train pools are one
  "GPU" each, of the profile's measured device, placed disaggregated (nothing time-shares);
- the weight sync copies the weights twice through host memory (trainer -> shared buffer ->
  engine): 4 bytes moved per weight byte at the profile's measured copy rate (read + write
  counted), so the link's bandwidth is that rate / 4; its latency is what the weight-sync
  microbenchmark (`weightsync`: the job's own copy loops, pipe and wake-up, timed before
  the live runs) measured beyond that bandwidth term, when given;
- the reward latency distribution (`reward.latency`: lognormal, median and log-space sigma)
  is fitted to the recorded per-sample reward seconds. sync and one_off replay each
  sample's recorded seconds, which are the reward call's wall time as the job paid it,
  spread over its samples (`reward.RewardPool.score`): a replayed latency, like the
  environment's, so the `reward` phase compares a measurement with itself and only checks
  that the simulator schedules it; rlsim's async policy scores every sample as it finishes
  with a latency drawn from this distribution (it does not read recorded reward seconds);
- the engines' `rollout.request_overhead` (seconds per request admitted or finished that
  stall the next iteration) is the rollout driver's per-request work as the driver
  microbenchmark (`driver`: the job's own workers, pipes, tokenizer and engine, timed before
  the live runs) measured it, averaged over the request events of this run's workload (its
  samples and environment steps: a count from the rollouts the simulator replays anyway);
  the schema's 0 without it;
- mode async: policy `async` with the live run's alpha and partial rollout (the live
  rollout process aborts and resumes its requests at every weight update), and the rollouts
  file holds every launched batch (steps + alpha of them), batch d at step d, as the
  simulator's producer asks for them.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from calibration.live.driver import DriverCosts
from calibration.live.runner import LiveResult
from calibration.live.weightsync import link_latency_s
from rlsim.cost.profile import Profile


def rollouts_lines(result: LiveResult) -> list[dict[str, Any]]:
    """One record per prompt group, in step order ('rlsim rollouts' format)."""
    cfg = result.config
    lines = []
    for step, samples in enumerate(result.rollouts):
        reward_s = result.reward_s[step] if step < len(result.reward_s) else None
        groups: dict[int, list[dict[str, Any]]] = {}
        for k, s in enumerate(samples):
            turns = []
            for i, t in enumerate(s.turns):
                turn: dict[str, Any] = {"response_tokens": len(t.response)}
                if i < len(s.turns) - 1:
                    turn |= {"env_s": t.env_s, "obs_tokens": len(t.obs)}
                turns.append(turn)
            rec: dict[str, Any] = {"turns": turns}
            if reward_s is not None:
                rec["reward_s"] = reward_s[k]
            groups.setdefault(s.prompt_index, []).append(rec)
        for i in range(cfg.prompts_per_step):
            lines.append({"step": step, "prompt_tokens": len(samples[i * cfg.samples_per_prompt]
                                                              .prompt),
                          "samples": groups[i]})
    return lines


def write_rollouts(result: LiveResult, path: Path) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in rollouts_lines(result)))
    return path


def reward_latency(result: LiveResult) -> dict[str, float]:
    """Lognormal fit of the recorded per-sample reward seconds: median, log-space sigma."""
    logs = [math.log(max(x, 1e-9)) for secs in result.reward_s for x in secs]
    if not logs:
        raise ValueError("the live run recorded no reward seconds")
    return {"median": math.exp(statistics.median(logs)),
            "sigma": statistics.pstdev(logs) if len(logs) > 1 else 0.0}


def request_overhead_s(result: LiveResult, driver: DriverCosts) -> float:
    """The driver's seconds per request event for this run's workload (`DriverCosts`)."""
    samples = sum(len(batch) for batch in result.rollouts)
    env_steps = sum(max(len(s.turns) - 1, 0) for batch in result.rollouts for s in batch)
    return driver.request_overhead_s(samples, env_steps, result.config.mode == "async")


def policy_dict(result: LiveResult) -> dict[str, Any]:
    cfg = result.config
    policy: dict[str, Any] = {"name": cfg.mode, "placement": "disaggregated"}
    if cfg.mode == "async":
        # The live job drops an over-age group when the trainer takes it and issues its
        # prompt again (calibration/live/rollout.py): rlsim's `reissue`, like for like.
        policy["asynchronous"] = {"alpha": cfg.alpha, "partial_rollout": True,
                                  "over_age": "reissue"}
    return policy


def scenario_dict(result: LiveResult, profile: Profile, profile_path: str,
                  rollouts_path: str, weight_sync_s: list[float] | None = None,
                  driver: DriverCosts | None = None) -> dict[str, Any]:
    """The scenario (as YAML-able data) whose relative paths resolve next to it;
    `weight_sync_s`: the weight-sync microbenchmark's seconds (`weightsync`), for the
    link's latency (the schema's default without it); `driver`: the driver
    microbenchmark's costs (`driver`), for `rollout.request_overhead` (0 without it)."""
    cfg = result.config
    device = profile.device
    if device is None:
        raise ValueError("the validation profile must carry its measured device spec")
    spec = cfg.lm.model_spec()
    pool = {"profile": profile_path, "nodes": 1, "gpus_per_node": 1}
    link: dict[str, float] = {"bandwidth": device.hbm_bandwidth / 4}
    if weight_sync_s:
        link["latency"] = link_latency_s(weight_sync_s, spec.weight_bytes(profile.dtype_bytes),
                                         link["bandwidth"])
    return {
        "name": f"live-{cfg.mode}",
        "description": "rlsim's prediction of the live RL run recorded next to this file "
                       "(rlsim validate); derived from the live job's settings, its "
                       "recorded rollouts and the profile calibrated on the same machine.",
        "seed": cfg.seed,
        "steps": cfg.steps,
        "model": spec.model_dump(mode="json"),
        "pools": [{"name": "rollout", **pool}, {"name": "train", **pool}],
        "rollout": {"pool": "rollout", "tp": 1, "max_running_seqs": cfg.max_running,
                    # the live engine prefills every admitted prompt in one iteration
                    "max_batched_tokens": cfg.max_running * cfg.max_len,
                    **({"request_overhead": request_overhead_s(result, driver)}
                       if driver is not None else {})},
        # The trainer as the calibration measured it: FLOPs at the fitted MFU plus the fitted
        # fixed costs (`train_step`, `forward` benchmarks), not a framework backend's constants.
        # It packs each step's trajectories into rows as wide as the longest and computes the
        # pads (`grpo.pack`): `pack_rows`, as the benchmarks' fit priced them.
        "train": {"pool": "train", "backend": "profile", "recompute_activations": False,
                  "pack_rows": True, "ref_logprob": False,
                  "old_logprob": True, "micro_batch_tokens": cfg.micro_batch_tokens},
        "reward": {"kind": "rule", "workers": cfg.reward_workers,
                   "latency": reward_latency(result)},
        "env": {"workers": cfg.env_workers},
        "workload": {
            "prompts_per_step": cfg.prompts_per_step,
            "samples_per_prompt": cfg.samples_per_prompt,
            "max_prompt_len": cfg.max_len,
            "max_response_len": cfg.max_response_len,
            "trace": {"path": rollouts_path, "format": "rollouts"},
        },
        "policy": policy_dict(result),
        "link": link,
        # The live job copies the weights through one shared buffer: its measured cost is
        # the link's latency plus bytes at the link's rate (`weightsync`), nothing per tensor.
        "weight_sync": {"scheme": "link"},
        # No Ray driver between the live job's two processes: its own messages are in the
        # measured phases (the phase spans include them), so no controller phase on top.
        "controller": {"enabled": False},
    }
