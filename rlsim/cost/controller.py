"""Cost of the single controller's own work in one step (veRL's driver process).

Owns the mechanism of what the driver does per training step besides waiting
(docs/cost-model.md, "Controller"), counted from veRL's `RayPPOTrainer.fit`
(verl/trainer/ppo/ray_trainer.py): the driver holds the whole batch as one padded
`DataProto` and, for every worker-group call (`generate_sequences`, `compute_log_prob`,
`compute_ref_log_prob`, `compute_values`, `update_critic`, `update_actor`), splits it into
one chunk per worker, puts the chunks into Ray's object store and gets the outputs back and
concatenates them. Between the calls it computes the advantages itself ("compute
advantages, executed on the driver process"). Three terms:

- calls: one Ray round trip per call plus one actor-call submission per worker;
- bytes: every tensor the driver sends (at its send rate: each chunk consolidated and
  `torch.save`d by `DataProto.__getstate__` in `parallel_put`'s thread pool, then copied
  into the object store) and gets back (at its receive rate: every output loaded and
  concatenated on the driver's thread). veRL pads prompts to `max_prompt_len` and
  responses to `max_response_len`; ids, masks and positions are int64 (8 bytes),
  log-probs, values, scores, rewards, advantages and returns float32 (4 bytes);
- advantage: the driver's tensor work over the padded response tensor `[n, R]`.

Each call's transfer is kept apart (`ControllerCost.transfer_by_call`) because veRL times
it inside the call's own timer (`timing_s/old_log_prob` holds compute_log_prob's dispatch
and collect): the policies charge it in the phase that does the call.

SimPy-free and torch-free: `Phases.controller` calls `controller_cost` once per step.
"""

from __future__ import annotations

from dataclasses import dataclass

INT_BYTES = 8
"""veRL's input_ids, attention_mask, position_ids, prompts, responses and response_mask
are torch.long."""
FLOAT_BYTES = 4
"""Log-probs, entropies, values, scores, rewards, advantages and returns are float32."""

CALLS = ("generate", "old_logprob", "ref_logprob", "critic_values", "update_critic",
         "update_actor")
"""veRL's worker-group calls of one step, in `RayPPOTrainer.fit`'s order; the names after
`generate` are the trainer passes' labels (`Phases.ref`, `Phases.train`)."""


@dataclass(frozen=True, slots=True)
class ControllerCost:
    """The driver's work of one step, by term (seconds) and what drives it."""

    calls: int
    call_s: float
    bytes_moved: float
    transfer_s: float
    advantage_elements: int
    advantage_s: float
    transfer_by_call: tuple[tuple[str, float], ...] = ()
    """(call, seconds of its dispatch and collect) for the calls made, in CALLS order;
    they sum to `transfer_s`."""

    @property
    def total_s(self) -> float:
        return self.call_s + self.transfer_s + self.advantage_s

    def transfer_of(self, call: str) -> float:
        """Seconds of `call`'s dispatch and collect (0 for a call the step does not make)."""
        # a float even when the call is not made (0.0, not the int 0 of an empty sum): the
        # spans carry it, and the compiled policies coerce it to float
        return sum((s for name, s in self.transfer_by_call if name == call), 0.0)

    def attrs(self) -> dict[str, float]:
        return {"calls": self.calls, "call_s": self.call_s, "bytes": self.bytes_moved,
                "transfer_s": self.transfer_s, "advantage_elements": self.advantage_elements,
                "advantage_s": self.advantage_s}


def call_bytes_per_response(prompt_len: int, response_len: int, old_logprob: bool = True,
                            ref_logprob: bool = True, critic: bool = False
                            ) -> list[tuple[str, int, int]]:
    """(call, bytes sent, bytes received) per response for each call of one veRL step, in
    order (`ray_trainer.fit`); the batch grows by each call's output and by the advantage's
    four [n, R] tensors, and every later call ships the whole batch.
    P = prompt_len, R = response_len, L = P + R (padded)."""
    if prompt_len < 0 or response_len < 0:
        raise ValueError(f"padded lengths must be >= 0, got prompt {prompt_len}, "
                         f"response {response_len}")
    p, r = prompt_len, response_len
    length = p + r
    i, f = INT_BYTES, FLOAT_BYTES
    # generate_sequences: sends the prompts' input_ids, attention_mask, position_ids; gets
    # prompts, responses, input_ids, attention_mask, position_ids
    calls = [("generate", 3 * i * p, i * p + i * r + 3 * i * length)]
    batch = i * p + i * r + 3 * i * length + i * r  # + response_mask, set on the driver
    if old_logprob:  # compute_log_prob: gets old_log_probs and entropys (entropys popped)
        calls.append(("old_logprob", batch, 2 * f * r))
        batch += f * r
    if ref_logprob:  # compute_ref_log_prob: gets ref_log_prob
        calls.append(("ref_logprob", batch, f * r))
        batch += f * r
    if critic:  # compute_values: gets values
        calls.append(("critic_values", batch, f * r))
        batch += f * r
    batch += 4 * f * r  # adv: token_level_scores, token_level_rewards, advantages, returns
    if critic:  # update_critic: sends the batch, gets metrics only
        calls.append(("update_critic", batch, 0))
    calls.append(("update_actor", batch, 0))  # sends the batch, gets metrics only
    return calls


def step_bytes_per_response(prompt_len: int, response_len: int, old_logprob: bool = True,
                            ref_logprob: bool = True, critic: bool = False) -> int:
    """Bytes the driver sends and gets per response in one veRL step (all calls)."""
    return sum(sent + got for _, sent, got in call_bytes_per_response(
        prompt_len, response_len, old_logprob, ref_logprob, critic))


def controller_cost(responses: int, prompt_len: int, response_len: int,
                    rollout_workers: int, train_workers: int, *, call_latency_s: float,
                    per_worker_call_s: float, bytes_per_s: float,
                    advantage_per_element_s: float, old_logprob: bool = True,
                    ref_logprob: bool = True, critic: bool = False,
                    receive_bytes_per_s: float | None = None) -> ControllerCost:
    """The driver's work of one step over `responses` padded to `prompt_len` +
    `response_len`: `calls * call_latency_s + workers_called * per_worker_call_s +
    sent / bytes_per_s + received / receive_bytes_per_s + responses * response_len *
    advantage_per_element_s` (`receive_bytes_per_s` None: `bytes_per_s`).
    `rollout_workers` take the generate call, `train_workers` the others (veRL: one Ray
    actor per GPU)."""
    if responses < 0:
        raise ValueError(f"responses must be >= 0, got {responses}")
    if rollout_workers < 1 or train_workers < 1:
        raise ValueError(f"worker counts must be >= 1, got rollout {rollout_workers}, "
                         f"train {train_workers}")
    if bytes_per_s <= 0:
        raise ValueError(f"controller.bandwidth must be > 0, got {bytes_per_s}")
    receive = bytes_per_s if receive_bytes_per_s is None else receive_bytes_per_s
    if receive <= 0:
        raise ValueError(f"controller.receive_bandwidth must be > 0, got {receive}")
    if responses == 0:
        return ControllerCost(0, 0.0, 0.0, 0.0, 0, 0.0)
    train_calls = int(old_logprob) + int(ref_logprob) + 2 * int(critic) + 1
    calls = 1 + train_calls
    workers_called = rollout_workers + train_calls * train_workers
    call_s = calls * call_latency_s + workers_called * per_worker_call_s
    per_call = call_bytes_per_response(prompt_len, response_len, old_logprob, ref_logprob,
                                       critic)
    moved = float(responses * sum(sent + got for _, sent, got in per_call))
    by_call = tuple((name, responses * (sent / bytes_per_s + got / receive))
                    for name, sent, got in per_call)
    elements = responses * response_len
    return ControllerCost(calls, call_s, moved, sum(s for _, s in by_call), elements,
                          elements * advantage_per_element_s, by_call)
