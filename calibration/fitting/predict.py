"""Every compute, engine and trainer benchmark point priced by rlsim's own cost classes.

Owns the benchmark groups (which grids are held back, which are priced here), the model
shapes of the layer and whole-model benchmarks (`layer_model`, `engine_model`), and
`Predictor` / `predict`: `GemmModel`, `ElementwiseModel`, `InferenceCost.decode_attention_s
/ prefill_attention_s / layer_step_s / step` and `TrainCost`, so a fitted constant's error
is the error of exactly what the simulator computes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from rlsim.config.hardware import GpuSpec, ModelSpec
from rlsim.cost.inference import InferenceCost, StepCost
from rlsim.cost.kernels import ElementwiseModel, GemmModel
from rlsim.cost.profile import Profile
from rlsim.cost.training import TrainBatching, TrainCost

# Grids a quarter of which is held back from the fit and predicted afterwards.
COMPUTE_BENCHES = ("gemm", "attention_decode", "attention_prefill", "layer_decode",
                   "layer_prefill")
# Whole iterations of a small real engine (embedding, all layers, LM head, sampling,
# bookkeeping) and whole steps of a small real trainer: they fit the per-iteration engine
# overheads and the trainer MFUs and overheads, after the compute grids.
ENGINE_BENCHES = ("engine_decode", "engine_prefill", "engine_mixed", "engine_trace")
TRAINER_BENCHES = ("train_step", "forward")
# Every grid a quarter of which is held back, and every benchmark `Predictor` prices.
HELD_BACK_BENCHES = (*COMPUTE_BENCHES, *ENGINE_BENCHES, *TRAINER_BENCHES)
PREDICTED_BENCHES = (*HELD_BACK_BENCHES, "elementwise")
# Bytes an elementwise op moves per byte of its output tensor, as the cost model counts them
# (calibration/benchmarks/elementwise.py): silu_mul and add read 2x and write 1x, rmsnorm
# reads and writes 1x. Unfused eager sub-ops show up as a lower efficiency, not more bytes.
ELEMENTWISE_BYTES_PER_OUTPUT_BYTE = {"silu_mul": 3.0, "add": 3.0, "rmsnorm": 2.0}
# The efficiency constant each elementwise benchmark op informs (and is predicted with).
ELEMENTWISE_CONSTANT = {"silu_mul": "activation_hbm_efficiency",
                        "add": "elementwise_hbm_efficiency",
                        "rmsnorm": "norm_hbm_efficiency"}
ELEMENTWISE_LAUNCH = {"silu_mul": "activation_launch_s", "add": "elementwise_launch_s",
                      "rmsnorm": "norm_launch_s"}
DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2, "float8_e4m3fn": 1}
# Parameters that define the whole model of an engine or trainer benchmark.
MODEL_KEYS = ("hidden", "heads", "kv_heads", "head_dim", "ffn", "layers", "vocab")


def layer_model(params: Mapping[str, Any]) -> ModelSpec:
    """A one-layer ModelSpec with the benchmark's dimensions (vocab unused per layer)."""
    heads, kv_heads, head_dim = int(params["heads"]), int(params["kv_heads"]), \
        int(params["head_dim"])
    hidden = int(params.get("hidden", heads * head_dim))
    ffn = int(params.get("ffn", 4 * hidden))
    return ModelSpec(name="calibration-layer", layers=1, hidden=hidden, heads=heads,
                     kv_heads=kv_heads, head_dim=head_dim, ffn=ffn, vocab=1)


def engine_model(params: Mapping[str, Any]) -> ModelSpec:
    """The whole model of an engine or trainer benchmark: `layer_model`'s layer dimensions
    with `layers` layers and a `vocab`-wide untied embedding and LM head (gated MLP)."""
    layer = layer_model(params)
    return layer.model_copy(update={"name": "calibration-model",
                                    "layers": int(params["layers"]),
                                    "vocab": int(params["vocab"]),
                                    "tied_embeddings": False, "gated_mlp": True})


def dtype_bytes(name: str) -> int:
    """Bytes per element of a dtype name ('float32', 'torch.bfloat16')."""
    try:
        return DTYPE_BYTES[name.removeprefix("torch.")]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(DTYPE_BYTES)}") from None


K = TypeVar("K")
V = TypeVar("V")


def sample_lengths(params: Mapping[str, Any]) -> list[int] | None:
    """A trainer point's samples' lengths (its `lengths` param, comma-separated), None when
    the point does not record them."""
    if "lengths" not in params:
        return None
    return [int(x) for x in str(params["lengths"]).split(",") if x]


def _memo(cache: dict[K, V], key: K, make: Callable[[], V]) -> V:
    """cache[key], built by `make()` the first time."""
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = make()
    return hit


class Predictor:
    """Predicted median time of any benchmark point for one (profile, device)."""

    def __init__(self, profile: Profile, device: GpuSpec) -> None:
        self.profile = profile
        self.device = device
        self._gemm: dict[int, GemmModel] = {}
        self._ews: dict[str, ElementwiseModel] = {}
        self._engines: dict[tuple[str, ...], InferenceCost] = {}
        self._models: dict[tuple[str, ...], InferenceCost] = {}
        self._trainers: dict[tuple[str, ...], TrainCost] = {}

    def _engine(self, params: Mapping[str, Any]) -> InferenceCost:
        key = tuple(str(params.get(k)) for k in ("hidden", "heads", "kv_heads", "head_dim", "ffn"))
        return _memo(self._engines, key, lambda: InferenceCost(
            layer_model(params), self.device, 1, self.profile))

    def _whole_engine(self, params: Mapping[str, Any]) -> InferenceCost:
        """A TP-1 engine of the benchmark's whole model (all layers, embedding, LM head)."""
        key = tuple(str(params.get(k)) for k in MODEL_KEYS)
        return _memo(self._models, key, lambda: InferenceCost(
            engine_model(params), self.device, 1, self.profile))

    def _trainer(self, params: Mapping[str, Any]) -> TrainCost:
        """A one-GPU trainer of the benchmark's model, without activation recomputation;
        one that packs rows (`pack_rows`) when the point records its samples' lengths."""
        packs = "lengths" in params
        key = (*(str(params.get(k)) for k in (*MODEL_KEYS, "dtype")), str(packs))
        d = dtype_bytes(str(params["dtype"])) if "dtype" in params else None
        return _memo(self._trainers, key, lambda: TrainCost(
            engine_model(params), self.device, 1, 1, 1, 1, self.profile,
            recompute_activations=False, dtype_bytes=d,
            batching=TrainBatching(recompute="none", pack_rows=packs)))

    def engine_step(self, bench: str, params: Mapping[str, Any]) -> StepCost:
        """The `InferenceCost.step` of one engine iteration: `engine_decode` runs `batch`
        decodes over `batch * context` cached tokens, `engine_prefill` prefills one prompt
        of `tokens` tokens (one prefilling sequence, no decodes)."""
        eng = self._whole_engine(params)
        if bench == "engine_decode":
            b, c = int(params["batch"]), int(params["context"])
            return eng.step(b, b * c)
        if bench == "engine_prefill":
            return eng.step(0, 0, int(params["tokens"]))
        if bench == "engine_trace":
            lens = [int(x) for x in str(params["prefill"]).split(",") if x]
            return eng.step(int(params["decode"]), int(params["kv_tokens"]), sum(lens), 0,
                            [(t, 0) for t in lens] if lens else None)
        if bench == "engine_mixed":
            b, c = int(params["batch"]), int(params["context"])
            n, t = int(params["prefills"]), int(params["tokens"])
            return eng.step(b, b * c, n * t, 0, [(t, 0)] * n)
        raise ValueError(f"{bench!r} is not an engine benchmark")

    def gemm_s(self, params: Mapping[str, Any]) -> float:
        d = dtype_bytes(str(params["dtype"])) if "dtype" in params else self.profile.dtype_bytes
        model = self._gemm.get(d)
        if model is None:
            model = GemmModel(self.device, self.profile, d)
            self._gemm[d] = model
        return model.time_s(int(params["m"]), int(params["n"]), int(params["k"]),
                            warm_cache=True)

    def elementwise_s(self, params: Mapping[str, Any]) -> float:
        op = str(params["op"])
        model = self._ews.get(op)
        if model is None:
            model = ElementwiseModel(self.device, self.profile,
                                     getattr(self.profile, ELEMENTWISE_CONSTANT[op]),
                                     getattr(self.profile, ELEMENTWISE_LAUNCH[op]))
            self._ews[op] = model
        size = ELEMENTWISE_BYTES_PER_OUTPUT_BYTE[op] * float(params["size_bytes"])
        return model.time_s(size, warm_cache=True)

    def __call__(self, bench: str, params: Mapping[str, Any]) -> float:
        if bench == "gemm":
            return self.gemm_s(params)
        if bench == "elementwise":
            return self.elementwise_s(params)
        if bench == "attention_decode":
            b, c = int(params["batch"]), int(params["context"])
            return self._engine(params).decode_attention_s(b, b * c, warm_cache=True)
        if bench == "attention_prefill":
            return self._engine(params).prefill_attention_s(int(params["tokens"]),
                                                            warm_cache=True)
        if bench == "layer_decode":
            # The step appends the new token and attends to context + 1 tokens.
            b, c = int(params["batch"]), int(params["context"])
            return self._engine(params).layer_step_s(b, b * (c + 1))
        if bench == "layer_prefill":
            return self._engine(params).layer_step_s(0, 0, int(params["tokens"]))
        if bench in ENGINE_BENCHES:
            return self.engine_step(bench, params).total_s
        if bench in TRAINER_BENCHES:
            trainer = self._trainer(params)
            tokens, seq = int(params["tokens"]), float(params["seq_tokens"])
            lens = sample_lengths(params)
            if bench == "train_step":
                return trainer.train_step(tokens, seq, lens).total_s
            return trainer.forward_s(tokens, seq, lens)
        raise ValueError(f"no rlsim prediction for benchmark {bench!r}")


def predict(bench: str, params: Mapping[str, Any], profile: Profile,
            device: GpuSpec | None = None) -> float:
    """Predicted median seconds of one compute, engine or trainer benchmark point (device:
    the profile's)."""
    dev = device if device is not None else profile.device
    if dev is None:
        raise ValueError("predict needs a device: the profile has none, pass device=")
    return Predictor(profile, dev)(bench, params)

