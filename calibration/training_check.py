"""The per-kernel trainer against published pre-training throughput (no RL in the loop).

Each `Published` row is one measured pre-training configuration from a public benchmark
table (model, GPUs, layout, batch, sequence length, recompute, BF16) with its measured step
time; `check()` builds the `TrainCost` that layout describes, prices one optimizer step over
the same batch and returns rlsim's step time next to the published one. Nothing here is
fitted: the trainer's constants are cited kernel properties (docs/cost-model.md section 3);
these rows only validate them (docs/validation.md, "Trainer against published throughput").

Run: `python -m calibration.training_check` (prints the markdown table).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rlsim.config.hardware import ModelSpec, lookup_gpu, lookup_model
from rlsim.cost.backends import lookup_backend
from rlsim.cost.profile import builtin_profile
from rlsim.cost.training import Recompute, TrainBatching, TrainCost

# GPT-3 175B as NeMo Megatron trains it (Brown et al. 2020, Table 2.1: 96 layers, d_model
# 12288, 96 heads; MLP 4 x d_model, not gated; NeMo's 51,200-token vocabulary).
GPT3_175B = ModelSpec(name="gpt3-175b", layers=96, hidden=12288, heads=96, kv_heads=96,
                      ffn=4 * 12288, vocab=51200, gated_mlp=False)

_DGXC = "https://github.com/NVIDIA/dgxc-benchmarking/blob/main/"
_TITAN = ("https://github.com/pytorch/torchtitan/blob/main/benchmarks/"
          "llama3_h100_202412_torchtitan.md")


@dataclass(frozen=True, slots=True)
class Published:
    """One published pre-training measurement: the layout, the batch and the step time."""

    label: str
    model: ModelSpec
    gpu: str
    backend: str
    gpus: int
    tp: int
    pp: int
    cp: int
    global_batch: int  # sequences per optimizer step
    micro_batch: int  # sequences per micro-batch (per model replica)
    seq_tokens: int
    recompute: Recompute
    step_s: float  # measured seconds per optimizer step
    source: str
    note: str = ""
    # The source's own statement of its GPUs' HBM bandwidth when it differs from the
    # catalogue GPU's (torchtitan's Grand Teton H100s: HBM2e, 2.4 TB/s); None: catalogue.
    hbm_bandwidth: float | None = None
    # True: the run fuses the memory-bound kernels (torch.compile) where the backend
    # otherwise runs them eager: priced with fused kernels.
    fused: bool = False
    ep: int = 1  # expert parallelism (MoE rows)
    # The run's router imbalance where it states one (forced balance: 1.0); None: the
    # backend's.
    router_imbalance: float | None = None
    moe_dispatcher: str = "alltoall"  # the run's expert dispatcher (HybridEP rows: deepep)

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.global_batch * self.seq_tokens / self.step_s / self.gpus


PUBLISHED: tuple[Published, ...] = (
    Published("Llama-3.1-8B NeMo 24.09", lookup_model("llama-3.1-8b"), "H100", "megatron",
              gpus=8, tp=1, pp=1, cp=2, global_batch=128, micro_batch=1, seq_tokens=8192,
              recompute="none", step_s=12.91, source=_DGXC + "llama3.1/README_8b.md",
              note="BF16 table, 8x H100"),
    Published("Llama-3.1-70B NeMo 24.09", lookup_model("llama-3.1-70b"), "H100", "megatron",
              gpus=64, tp=4, pp=4, cp=2, global_batch=128, micro_batch=1, seq_tokens=8192,
              recompute="none", step_s=14.72, source=_DGXC + "llama3.1/README_70b.md",
              note="BF16 table, 64x H100; VP=5 (rlsim: plain 1F1B)"),
    Published("GPT-3 175B NeMo Megatron", GPT3_175B, "H100", "megatron",
              gpus=128, tp=4, pp=8, cp=1, global_batch=256, micro_batch=1, seq_tokens=2048,
              recompute="none", step_s=8.309, source=_DGXC + "nemo_megatron/README_175b.md",
              note="BF16 table, 128x H100; VP=12 (rlsim: plain 1F1B)"),
    Published("Llama-3.1-8B torchtitan FSDP", lookup_model("llama-3.1-8b"), "H100", "fsdp2",
              gpus=8, tp=1, pp=1, cp=1, global_batch=16, micro_batch=2, seq_tokens=8192,
              recompute="selective", step_s=2 * 8192 / 5762, source=_TITAN,
              note="Table 1, FSDP eager: 5,762 tokens/s/GPU; 500 W H100, HBM2e 2.4 TB/s",
              hbm_bandwidth=2.4e12),
    Published("Llama-3.1-8B torchtitan FSDP + compile", lookup_model("llama-3.1-8b"), "H100",
              "fsdp2", gpus=8, tp=1, pp=1, cp=1, global_batch=16, micro_batch=2,
              seq_tokens=8192, recompute="selective", step_s=2 * 8192 / 6667, source=_TITAN,
              note="Table 1, FSDP + torch.compile: 6,667 tokens/s/GPU", hbm_bandwidth=2.4e12,
              fused=True),
)


_MB_CARD = ("https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/067f987df03b8355b03192d88d70f1709fedf51a/"
            "examples/model_verification_cards/qwen3-30b-a3b/card.yaml")
_MB_OVERLAP = ("https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/067f987df03b8355b03192d88d70f1709fedf51a/"
               "skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md")

# Fine-grained MoE pre-training on Megatron-Core (BF16, H100), kept apart from PUBLISHED:
# the rows measure what tuned MoE stacks reach (HybridEP, CUDA graphs over the router), the
# expert all-to-all crossing two nodes. Validation only (docs/validation.md, "Trainer
# against published throughput", MoE).
MOE_PUBLISHED: tuple[Published, ...] = (
    Published("Qwen3-30B-A3B Megatron-Bridge card, pretrain.H100 (natural routing)",
              lookup_model("qwen3-30b-a3b"), "H100", "megatron", gpus=16, tp=1, pp=1, cp=1,
              global_batch=1024, micro_batch=1, seq_tokens=4096, recompute="none",
              step_s=30.28955, ep=16, moe_dispatcher="deepep", source=_MB_CARD,
              note="card item pretrain.H100: 30289.550 ms/step, 8,654.6 tok/s/GPU; RP2 data, "
                   "HybridEP, TE CUDA graphs (moe_router, moe_preprocess)"),
    Published("Qwen3-30B-A3B Megatron-Bridge card, pretrain_performance.H100 (forced balance)",
              lookup_model("qwen3-30b-a3b"),
              "H100", "megatron", gpus=16, tp=1, pp=1, cp=1, global_batch=1024, micro_batch=1,
              seq_tokens=4096, recompute="none", step_s=20.14729, ep=16, router_imbalance=1.0,
              moe_dispatcher="deepep",
              source=_MB_CARD,
              note="card item pretrain_performance.H100: 20147.290 ms/step, 13,011 tok/s/GPU; "
                   "mock data, HybridEP, EP comm overlap on, CUDA graphs"),
    Published("Qwen3-30B-A3B Megatron-Bridge EP-overlap A/B, overlap off (forced balance)",
              lookup_model("qwen3-30b-a3b"), "H100", "megatron", gpus=16, tp=1, pp=1, cp=1,
              global_batch=1024, micro_batch=1, seq_tokens=4096, recompute="none",
              step_s=24.7138, ep=16, router_imbalance=1.0, moe_dispatcher="deepep",
              source=_MB_OVERLAP,
              note="2026-07-25 controlled A/B, overlap off: 24.7138 s (on: 20.9920 s)"),
)


_MARIN_3666 = "https://github.com/marin-community/marin/issues/3666"


@dataclass(frozen=True, slots=True)
class LayerBench:
    """One Megatron-Core MoE layer timed alone, forward + backward, on one node: `ep` GPUs
    of expert parallelism (TP 1), `tokens_per_rank` tokens on each, force-balanced routing,
    the slowest rank's mean (marin-community/marin issue 3666, a copy of Megatron-LM's
    `moe_perf` test)."""

    label: str
    model: ModelSpec  # the catalogue model whose MoE layer has the benchmark's shape
    gpu: str
    ep: int
    tokens_per_rank: int
    moe_dispatcher: str  # "alltoall", or "deepep" (flex with DeepEP)
    measured_ms: float
    source: str


def _layer(label: str, model: str, tokens: int, dispatcher: str, ms: float) -> LayerBench:
    return LayerBench(label, lookup_model(model), "H100", 8, tokens, dispatcher, ms,
                      _MARIN_3666)


# The "authoritative totals (forward + backward, milliseconds)": its Qwen3-30B-A3B
# anchor (hidden 2048, expert FFN 768, 128 experts, top 8) at micro-batch 1, 2 and 4 of 4,096
# tokens, and its Qwen3-235B-A22B anchor (hidden 4096, expert FFN 1536). Validation only.
MOE_LAYER: tuple[LayerBench, ...] = tuple(
    _layer(f"{name} layer, {tokens:,} tokens a rank, {disp}", model, tokens, disp, ms)
    for name, model, tokens, disp, ms in (
        ("Qwen3-30B-A3B", "qwen3-30b-a3b", 4096, "alltoall", 34.95),
        ("Qwen3-30B-A3B", "qwen3-30b-a3b", 8192, "alltoall", 33.77),
        ("Qwen3-30B-A3B", "qwen3-30b-a3b", 16384, "alltoall", 35.27),
        ("Qwen3-30B-A3B", "qwen3-30b-a3b", 4096, "deepep", 12.41),
        ("Qwen3-30B-A3B", "qwen3-30b-a3b", 8192, "deepep", 12.42),
        ("Qwen3-30B-A3B", "qwen3-30b-a3b", 16384, "deepep", 18.09),
        ("Qwen3-235B-A22B", "qwen3-235b-a22b", 4096, "alltoall", 25.62),
        ("Qwen3-235B-A22B", "qwen3-235b-a22b", 4096, "deepep", 11.75),
    ))


def _one_layer_s(model: ModelSpec, b: LayerBench, ep: int) -> float:
    """Forward + backward of one layer of `model` (its attention included) at the bench's
    tokens a rank: the two-layer model's micro-batch less the one-layer model's."""
    gpu = lookup_gpu(b.gpu)
    backend = replace(lookup_backend("megatron"), router_imbalance=1.0, host_ops=None,
                      micro_batch_overhead_s=0.0)
    out = []
    for layers in (2, 1):
        cost = TrainCost(model.model_copy(update={"layers": layers}), gpu, b.ep, 1, 1, 1,
                         builtin_profile(gpu), recompute_activations=False, backend=backend,
                         batching=TrainBatching(recompute="none", ep=ep,
                                                moe_dispatcher=b.moe_dispatcher))
        out.append(cost.micro_batch_s([b.tokens_per_rank], backward=True))
    return out[0] - out[1]


def moe_layer_s(b: LayerBench) -> float:
    """rlsim's forward + backward of the bench's MoE block alone: one layer of its model
    less one layer of the same model with the MoE block replaced by a one-wide dense MLP
    (attention, norms and projections cancel). Kernels and collectives only: the host's
    dispatch and the framework's per-micro-batch cost are left out, as the benchmark's
    fixed input leaves out the data path."""
    dense = b.model.model_copy(update={"moe": None, "ffn": 1})
    return _one_layer_s(b.model, b, b.ep) - _one_layer_s(dense, b, 1)


def layer_table(benches: tuple[LayerBench, ...]) -> str:
    lines = ["| MoE layer (forward + backward, H100, EP 8, balanced) | measured ms | rlsim ms "
             "| rlsim/measured |", "|---|---:|---:|---:|"]
    for b in benches:
        ms = 1e3 * moe_layer_s(b)
        lines.append(f"| [{b.label}]({b.source}) | {b.measured_ms:.2f} | {ms:.2f} | "
                     f"{ms / b.measured_ms:.2f} |")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class CheckRow:
    published: Published
    rlsim_step_s: float
    compute_s: float
    comm_s: float
    bubble_s: float
    other_s: float

    @property
    def ratio(self) -> float:
        """rlsim step time over the measured one (< 1: rlsim too fast)."""
        return self.rlsim_step_s / self.published.step_s


def train_cost(p: Published) -> TrainCost:
    """The TrainCost of a published layout: fixed micro-batches of `micro_batch` sequences."""
    gpu = lookup_gpu(p.gpu)
    profile = builtin_profile(gpu)  # the catalogue GPU's constants, before any override
    if p.hbm_bandwidth is not None:
        gpu = gpu.model_copy(update={"hbm_bandwidth": p.hbm_bandwidth})
    backend = lookup_backend(p.backend)
    if p.fused:
        backend = replace(backend, elementwise_traffic=None)
    if p.router_imbalance is not None:
        backend = replace(backend, router_imbalance=p.router_imbalance)
    batching = TrainBatching(recompute=p.recompute, micro_batch_size=p.micro_batch, ep=p.ep,
                             moe_dispatcher=p.moe_dispatcher)
    return TrainCost(p.model, gpu, p.gpus, p.tp, p.pp, p.cp, profile,
                     recompute_activations=p.recompute != "none",
                     micro_batch_tokens=p.micro_batch * p.seq_tokens, seq_tokens=p.seq_tokens,
                     backend=backend, batching=batching)


def check(p: Published) -> CheckRow:
    """rlsim's step time for one published configuration (one optimizer step)."""
    cost = train_cost(p)
    step = cost.train_step(p.global_batch * p.seq_tokens,
                           lengths=[p.seq_tokens] * p.global_batch)
    other = step.optimizer_s + step.overhead_s + step.offload_s
    return CheckRow(p, step.total_s, step.compute_s, step.comm_s, step.bubble_s, other)


def table(rows: list[CheckRow]) -> str:
    lines = ["| configuration | layout | published s/step | rlsim s/step | rlsim/published "
             "| compute / comm / bubble / other s |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        p = r.published
        lines.append(
            f"| [{p.label}]({p.source}) | {p.gpus} GPU tp{p.tp} pp{p.pp} cp{p.cp}"
            f"{f' ep{p.ep}' if p.ep > 1 else ''}, GBS "
            f"{p.global_batch} x {p.seq_tokens}, mbs {p.micro_batch}, recompute "
            f"{p.recompute} | {p.step_s:.2f} | {r.rlsim_step_s:.2f} | {r.ratio:.2f} | "
            f"{r.compute_s:.2f} / {r.comm_s:.2f} / {r.bubble_s:.2f} / {r.other_s:.2f} |")
    return "\n".join(lines)


def main() -> None:
    print(table([check(p) for p in PUBLISHED]))
    print()
    print(table([check(p) for p in MOE_PUBLISHED]))
    print()
    print(layer_table(MOE_LAYER))


if __name__ == "__main__":
    main()
