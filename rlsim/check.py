"""What `rlsim check` says of a prepared job: where everything runs and whether it fits.

Owns `describe(job)` (the prepared job as a JSON-ready mapping: the GPU to engine and
trainer-rank map, memory per GPU of each role, host memory per node, expected faults per
step, the run's size) and `lines(described)` (the same for a terminal). Nothing is
simulated: the prepare step (rlsim/prepare.py) has priced and checked it all; this module
only reads what it found. "Will this run out of memory?" is the first question a user asks.
"""

from __future__ import annotations

from typing import Any

from rlsim.config.limits import format_duration
from rlsim.config.scenario import FrameworkConfig
from rlsim.prepare import PreparedJob

GIB = 2.0**30


def _span(first: int, count: int) -> str:
    return f"GPU {first}" if count == 1 else f"GPUs {first}-{first + count - 1}"


def describe(job: PreparedJob) -> dict[str, Any]:
    """The prepared job's placement, memory, faults and size (see the module docstring)."""
    sc, place, costs = job.scenario, job.placement, job.costs
    mem, r, t = costs.memory, sc.rollout, sc.train
    per_engine = place.engine_gpus
    engines = [{"engine": e, "gpus": [e * per_engine, (e + 1) * per_engine - 1]}
               for e in range(place.engines)]
    first_train = 0 if place.colocated else place.rollout_gpus
    rgpu, tgpu = place.rollout_pool.gpu_spec, place.train_pool.gpu_spec
    kv_tokens = costs.kv_tokens
    faults: dict[str, Any] | None = None
    if job.faults is not None:
        worst = max(job.faults.units, key=lambda u: u.faults, default=None)
        faults = {"per_step": job.faults.per_step,
                  "by_spec": {x.field: x.per_step for x in job.faults.loads},
                  "worst_unit": None if worst is None else {
                      "victim": worst.victim, "what": worst.what,
                      "expected_faults": worst.faults},
                  "stall_s": job.faults.stall_s}
    return {
        "name": sc.name, "policy": sc.policy.name, "placement": sc.policy.placement,
        "gpus": {"rollout": place.rollout_gpus, "train": place.train_gpus,
                 "distinct": place.gpus, "colocated": place.colocated},
        "rollout": {"pool": place.rollout_pool.name, "gpu": rgpu.name, "tp": r.tp,
                    "pp": r.pp, "gpus_per_engine": per_engine, "engines": engines},
        "trainer": {"pool": place.train_pool.name, "gpu": tgpu.name, "tp": t.tp, "pp": t.pp,
                    "cp": t.cp, "ranks": place.train_gpus,
                    "gpus": [first_train, first_train + place.train_gpus - 1]},
        "memory_per_gpu_bytes": {
            "rollout": {"hbm": rgpu.hbm, "weights": mem.engine_weight_bytes_per_gpu,
                        "kv_cache": mem.engine_kv_bytes_per_gpu,
                        "reserved": mem.reserved_bytes_per_gpu,
                        "kv_tokens_per_engine": kv_tokens},
            "trainer": {"hbm": tgpu.hbm, "state": mem.train_state_bytes_per_gpu,
                        "resident": mem.train_resident_bytes_per_gpu,
                        "offloaded": mem.train_offloaded_bytes_per_gpu}},
        "host_memory_per_node_bytes": {"needed": mem.host_bytes_per_node,
                                       "available": mem.host_memory_per_node},
        "faults": faults,
        "framework": _framework(sc),
        "work": {"samples": job.work.samples, "tokens": job.work.tokens,
                 "events": job.work.events, "wall_s": job.work.wall_s,
                 "memory_bytes": job.work.memory_bytes},
    }


# The `framework` knobs and their no-op defaults, from the schema (docs/cost-model.md,
# "Fitted framework knobs"); `name` and `profile` say where knobs come from, not a cost.
KNOB_DEFAULTS = {k: f.default for k, f in FrameworkConfig.model_fields.items()
                 if k not in ("name", "profile")}


def _framework(sc: Any) -> dict[str, Any]:
    """The framework the job names, whether its profile applies, and the knobs in force."""
    from rlsim.config.frameworks import profiles

    fw = sc.framework
    return {"name": fw.name,
            "profile": bool(fw.profile and fw.name is not None and fw.name in profiles()),
            "knobs": {k: getattr(fw, k) for k in KNOB_DEFAULTS}}


def lines(d: dict[str, Any]) -> list[str]:
    """`describe`'s mapping as lines for a terminal."""
    g, ro, tr = d["gpus"], d["rollout"], d["trainer"]
    m = d["memory_per_gpu_bytes"]
    out = [f"{d['name']}: can run ({d['policy']}, {d['placement']}; "
           f"{g['distinct']} GPUs)"]
    engines = ro["engines"]
    first = engines[0]
    last = engines[-1]
    k = ro["gpus_per_engine"]
    rule = "engine e on GPU e" if k == 1 else f"engine e on GPUs {k}e to {k}e+{k - 1}"
    out.append(f"rollout: {len(engines)} engine(s) of tp {ro['tp']} x pp {ro['pp']} on "
               f"{ro['gpu']} (pool {ro['pool']}): {rule} (engine {first['engine']}: "
               f"{_span(first['gpus'][0], k)}"
               + (f"; engine {last['engine']}: {_span(last['gpus'][0], k)}"
                  if len(engines) > 1 else "") + ")")
    lo, hi = tr["gpus"]
    out.append(f"trainer: {tr['ranks']} ranks (tp {tr['tp']} x pp {tr['pp']} x cp "
               f"{tr['cp']}) on {tr['gpu']} (pool {tr['pool']}): rank k on GPU {lo}+k "
               f"(GPUs {lo}-{hi}{', shared with the engines' if g['colocated'] else ''})")
    r, t = m["rollout"], m["trainer"]
    out.append(f"memory per rollout GPU ({r['hbm'] / GIB:.1f} GiB): weights "
               f"{r['weights'] / GIB:.1f} GiB, KV cache {r['kv_cache'] / GIB:.1f} GiB "
               f"({r['kv_tokens_per_engine']:,} tokens per engine)"
               + (f", reserved {r['reserved'] / GIB:.1f} GiB" if r["reserved"] else ""))
    out.append(f"memory per training GPU ({t['hbm'] / GIB:.1f} GiB): trainer state "
               f"{t['state'] / GIB:.1f} GiB, resident {t['resident'] / GIB:.1f} GiB, "
               f"offloaded {t['offloaded'] / GIB:.1f} GiB")
    h = d["host_memory_per_node_bytes"]
    held = ("offloaded state" if not g["colocated"] else
            "offloaded state, and the resident state while rollout runs" if t["offloaded"]
            else "the trainer state while rollout runs")
    out.append(f"host memory per training node: {h['needed'] / 1e12:.2f} TB of "
               f"{h['available'] / 1e12:.2f} TB" + (f" ({held})" if h["needed"] else ""))
    f = d["faults"]
    if f is None:
        out.append("faults: none")
    elif not f["by_spec"]:
        out.append("faults: at explicit times only; a run stops if no step finishes in "
                   f"{format_duration(f['stall_s'])}")
    else:
        worst = f["worst_unit"]
        out.append(f"faults: {f['per_step']:.3g} expected per step"
                   + "".join(f"; {k}: {v:.3g}" for k, v in f["by_spec"].items())
                   + (f"; {worst['expected_faults']:.3g} in {worst['what']}" if worst
                      else "")
                   + f"; a run stops if no step finishes in {format_duration(f['stall_s'])}")
    fw = d["framework"]
    moved = {k: v for k, v in fw["knobs"].items() if v != KNOB_DEFAULTS[k]}
    if fw["name"] is not None or moved:
        knobs = ", ".join(f"{k} {v:.3g}" + (" s" if k.endswith("overhead") else "")
                          for k, v in moved.items()) or "rlsim's own constants"
        source = (" (the knobs the file does not set come from its profile: `rlsim list "
                  "frameworks`; framework.profile: false for rlsim's own constants)"
                  if fw["profile"] else "")
        out.append(f"framework: {fw['name'] or 'not named'}; knobs: {knobs}{source}")
    w = d["work"]
    out.append(f"size: about {w['samples']:,.0f} samples, {w['events']:.3g} events, "
               f"{format_duration(w['wall_s'])} and {w['memory_bytes'] / GIB:.2g} GiB to "
               "simulate")
    return out
