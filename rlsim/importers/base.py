"""What an importer returns, and how an imported scenario is written out.

Owns `Facts` (what a framework config does not hold and the user passes by flag: GPU type,
node count, response lengths), `Imported` (the scenario dict an importer builds, the source
key behind every field it set, the config keys it ignored with the reason, and the
framework version whose defaults filled what the config does not set), the model
name lookup (a Hugging Face name or checkpoint path to a catalogue name), and the YAML
writer that puts each field's source beside it as a comment. The importers themselves
(`rlsim.importers.verl`, `rlsim.importers.roll`) only map keys; `check_runs` takes what
they built through the prepare step, as `rlsim run` would, naming the config key behind a
refused field.

Errors are `ScenarioError`s whose field is the config key or the command-line flag to fix
(the CLI prints one line and exits 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import GPUS, MODELS


@dataclass(frozen=True)
class Facts:
    """What the user tells an importer that a framework config does not hold; None: not
    given (an importer that needs it raises a ScenarioError naming the flag)."""

    gpu: str | None = None               # --gpu: catalogue GPU name, e.g. H800
    nodes: int | None = None             # --nodes
    gpus_per_node: int | None = None     # --gpus-per-node (default 8 when the config is silent)
    model: str | None = None             # --model: overrides the config's model path
    response_len_median: int | None = None  # --response-len-median (tokens)
    response_len_sigma: float | None = None  # --response-len-sigma (log-space)
    prompt_len_median: int | None = None    # --prompt-len-median (tokens)
    steps: int | None = None             # --steps: simulated steps (default: rlsim's)
    name: str | None = None              # --name: scenario name (default: the file's stem)


@dataclass
class Imported:
    """A scenario an importer built: `scenario` validates as rlsim's Scenario; `sources`
    maps each dotted field it set (list items by index: `pools.0.gpu`) to where the value
    came from (a config key such as `actor_rollout_ref.rollout.n`, a flag such as `--gpu`,
    or `default: ...` with the reason); `sections` does the same for a whole section whose
    source is a config key that sets no field of it (the `rollout` section: the engine the
    config names); `ignored` lists config keys it read past, each with why rlsim does not
    use it; `defaults_of` names the framework version whose defaults filled every key the
    config does not set (`veRL at volcengine/verl@<commit>`)."""

    scenario: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    ignored: list[tuple[str, str]] = field(default_factory=list)
    sections: dict[str, str] = field(default_factory=dict)
    defaults_of: str = ""

    def set(self, path: str, value: Any, source: str) -> None:
        """Set the dotted field `path` (integers index lists) to `value`, citing `source`."""
        parts = path.split(".")
        node: Any = self.scenario
        for i, part in enumerate(parts[:-1]):
            nxt = parts[i + 1]
            if isinstance(node, list):
                node = node[int(part)]
                continue
            if part not in node:
                node[part] = [] if nxt.isdigit() else {}
            node = node[part]
            if isinstance(node, list) and nxt.isdigit():
                while len(node) <= int(nxt):
                    node.append({})
        last = parts[-1]
        if isinstance(node, list):
            idx = int(last)
            while len(node) <= idx:
                node.append(None)
            node[idx] = value
        else:
            node[last] = value
        self.sources[path] = source

    def ignore(self, key: str, why: str) -> None:
        self.ignored.append((key, why))

    def cite_section(self, path: str, source: str) -> None:
        """Name `source` beside the section `path` (a dotted field holding a mapping)."""
        self.sections[path] = source


FILTERED_SHARE_UNKNOWN = (
    "the share of groups the filter drops (all rewards equal) is not in the config and is "
    "set to 0 (policy.schedule.zero_variance_fraction): set it to your run's share")
"""What every importer says of a config that filters prompt groups (veRL's
algorithm.filter_groups, ROLL's query_filter_config): the config holds the filter, never
the share of groups it drops."""


def check_runs(imported: Imported) -> None:
    """The imported scenario through rlsim's own door (loading, then the prepare step,
    rlsim/prepare.py: placement, memory fit, workload, faults), as `rlsim run` would take
    the written file; an error about a field the config set names the config key (or flag,
    or default) it came from, after the message the run would give."""
    from rlsim.config.loading import scenario_from_dict
    from rlsim.prepare import prepare

    try:
        scenario, base = scenario_from_dict(imported.scenario)
        prepare(scenario, base)
    except ScenarioError as err:
        source = imported.sources.get(err.field)
        if source is None:
            raise
        raise ScenarioError(err.field, f"{err.message} (from {source})") from None


def resolve_model(name: str, key: str) -> str:
    """The catalogue name of a model given as a Hugging Face id (`Qwen/Qwen2.5-7B-Instruct`),
    a checkpoint path (`~/models/Qwen2.5-7B`) or a catalogue name; `key` names the config
    key or flag for the error."""
    raw = name.strip().rstrip("/")
    base = raw.rsplit("/", 1)[-1]
    wanted = _model_key(base)
    for cat in MODELS:
        if _model_key(cat) == wanted:
            return cat
    # Instruct / chat / base variants share the architecture of the catalogue entry.
    trimmed = re.sub(r"-(instruct|chat|base|it|hf)$", "", wanted)
    for cat in MODELS:
        if _model_key(cat) == trimmed:
            return cat
    known = ", ".join(sorted(MODELS))
    raise ScenarioError(key, f"model {name!r} is not in rlsim's catalogue; pass --model with "
                        f"one of: {known} (or add it: docs/scenario.md, inline model specs)")


def _model_key(name: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")


def resolve_gpu(name: str, key: str) -> str:
    """The catalogue name of a GPU type (case-insensitive)."""
    for cat in GPUS:
        if cat.lower() == name.strip().lower():
            return cat
    raise ScenarioError(key, f"GPU {name!r} is not in rlsim's catalogue; use one of: "
                        + ", ".join(sorted(GPUS)))


# Megatron-Core's moe_flex_dispatcher_backend defaults to deepep
# (megatron/core/transformer/transformer_config.py:898 at NVIDIA/Megatron-LM d98e8a6).
FLEX_DEFAULT = " (moe_flex_dispatcher_backend: Megatron-Core's default deepep)"


def moe_dispatcher(kind: Any, deepep: bool, backend: Any) -> str:
    """rlsim's train.moe_dispatcher for Megatron's moe_token_dispatcher_type `kind`, with
    moe_enable_deepep and moe_flex_dispatcher_backend (None: unset): alltoall, or flex with
    DeepEP or HybridEP (bare flex: Megatron-Core's default DeepEP) as deepep. ValueError
    (one line, the fix; its second argument names the key at fault: "kind", "backend" or
    "deepep") for a dispatcher rlsim does not price or a pair Megatron refuses."""
    if kind == "alltoall":
        return "alltoall"
    if kind != "flex":
        raise ValueError(f"{kind!r}: rlsim prices Megatron's alltoall dispatcher and flex "
                         "with DeepEP or HybridEP; use alltoall or flex", "kind")
    if backend not in (None, "deepep", "hybridep"):
        raise ValueError(f"flex with moe_flex_dispatcher_backend {backend!r}: rlsim prices "
                         "DeepEP and HybridEP; use deepep or hybridep", "backend")
    if deepep and backend == "hybridep":
        raise ValueError("moe_enable_deepep with moe_flex_dispatcher_backend hybridep: "
                         "Megatron-Core allows one flex backend; drop one", "deepep")
    return "deepep"


# Why the hybrid CPU optimizer's keys set nothing when they put no share on the CPU.
CPU_OPTIMIZER_OFF = ("no share of the optimizer on the CPU (Megatron-Core needs "
                     "optimizer_cpu_offload true and optimizer_offload_fraction > 0)")


def cpu_optimizer_fraction(cpu_offload: bool, fraction: Any) -> float:
    """rlsim's train.optimizer_offload_fraction for Megatron-Core's optimizer_cpu_offload and
    optimizer_offload_fraction (None: unset, Megatron-Core's default 0.0): the fraction when
    the hybrid CPU optimizer is on, 0 when it is off (Megatron-Core builds its
    HybridDeviceOptimizer only under optimizer_cpu_offload, megatron/core/optimizer/
    __init__.py:504 at NVIDIA/Megatron-LM d98e8a6). ValueError (one line, the fix) for a
    fraction that is not a number in [0, 1]."""
    if fraction is None:
        fraction = 0.0
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not (
            0.0 <= fraction <= 1.0):
        raise ValueError(f"optimizer_offload_fraction {fraction!r}: a share of the optimizer "
                         "state in [0, 1], e.g. 1.0 for all of it on the CPU")
    return float(fraction) if cpu_offload else 0.0


def need(value: Any, flag: str, what: str) -> Any:
    """`value`, or a ScenarioError naming the flag that supplies it."""
    if value is None:
        raise ScenarioError(flag, f"the config does not say {what}; pass {flag}")
    return value


def to_yaml(imported: Imported, header: str) -> str:
    """The scenario as YAML, each field (and each cited section) followed by `# <source>`;
    `header` (one or more lines) becomes the leading comment."""
    lines = [f"# {h}" if h else "#" for h in header.splitlines()]
    _emit(imported.scenario, "", 0, {**imported.sections, **imported.sources}, lines)
    return "\n".join(lines) + "\n"


def _scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000)
    return text.removesuffix("\n...\n").strip()


def _emit(node: Any, prefix: str, indent: int, sources: dict[str, str],
          lines: list[str]) -> None:
    pad = "  " * indent
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}{key}"
            note = f"  # {sources[path]}" if path in sources else ""
            nested = isinstance(value, dict) or (
                isinstance(value, list) and any(isinstance(v, dict) for v in value))
            if nested and value:
                lines.append(f"{pad}{key}:{note}")
                _emit(value, path + ".", indent + 1, sources, lines)
            else:
                lines.append(f"{pad}{key}: {_scalar(value)}{note}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            path = f"{prefix}{i}"
            note = f"  # {sources[path]}" if path in sources else ""
            if isinstance(item, dict) and item:
                first = True
                for key, value in item.items():
                    sub = f"{path}.{key}"
                    sub_note = f"  # {sources[sub]}" if sub in sources else ""
                    lead = f"{pad}- " if first else f"{pad}  "
                    if isinstance(value, (dict, list)) and value:
                        lines.append(f"{lead}{key}:{sub_note}")
                        _emit(value, sub + ".", indent + 2, sources, lines)
                    else:
                        lines.append(f"{lead}{key}: {_scalar(value)}{sub_note}")
                    first = False
            else:
                lines.append(f"{pad}- {_scalar(item)}{note}")


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file beside it, so a failed write never
    leaves a partial file that looks complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
