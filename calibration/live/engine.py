"""A real continuous-batching generation engine with a KV cache (vLLM-like, CPU or CUDA).

Owns the batch of one engine: FCFS admission at iteration boundaries under a cap on running
sequences, a preallocated KV cache of `max_running` slots x `max_len` positions, one packed
iteration per `step()` (decodes plus whole-prompt prefills of the newly admitted, see
`TinyLM.iterate`), sampling, and stopping on EOS, on the request's token limit or on the
cache length. Running sequences always occupy slots 0..B-1: a finished sequence's slot is
refilled by moving the last one's KV into it, so decode attention reads one contiguous
block. The same rules as rlsim's engine model, which is what the validation checks: the
prefill iteration samples the first response token, each decode iteration one more.
`abort()` empties the engine as rlsim's engine does at a weight update (partial rollout):
the waiting requests, then the running ones by admission, each with its output so far.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from calibration.live.model import Packed, TinyLM
from calibration.live.tokenizer import EOS


@dataclass(eq=False)
class GenRequest:
    """A prompt (token ids) to continue for at most `max_new` tokens."""

    rid: int
    prompt: list[int]
    max_new: int
    on_done: Callable[[GenRequest], None] | None = None
    tag: object = None
    output: list[int] = field(default_factory=list)
    admitted: int = -1  # admission order in its engine (-1: not admitted)

    @property
    def context(self) -> int:
        return len(self.prompt) + len(self.output)


class Engine:
    """One engine: `submit()` requests, call `step()` until `idle`."""

    def __init__(self, model: TinyLM, max_running: int, max_len: int,
                 generator: torch.Generator | None = None, temperature: float = 1.0,
                 stop_on_eos: bool = True) -> None:
        if max_running < 1 or max_len < 2:
            raise ValueError("engine needs max_running >= 1 and max_len >= 2")
        if max_len > model.cfg.max_positions:
            raise ValueError(f"max_len {max_len} exceeds the model's "
                             f"{model.cfg.max_positions} positions")
        self.model = model
        self.max_running = max_running
        self.max_len = max_len
        self.temperature = temperature
        self.generator = generator
        # Off only in calibration, which must hold a batch steady while it times iterations.
        self.stop_on_eos = stop_on_eos
        self.cache = model.new_cache(max_running, max_len)
        self.waiting: deque[GenRequest] = deque()
        self.running: list[GenRequest] = []  # index == KV slot
        self.iterations = 0
        self.max_batch_seen = 0
        self._admissions = 0

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.running

    def submit(self, req: GenRequest) -> None:
        if not 1 <= len(req.prompt) < self.max_len:
            raise ValueError(f"request {req.rid}: prompt of {len(req.prompt)} tokens does not "
                             f"fit the engine's {self.max_len}-token context")
        if req.max_new < 1:
            raise ValueError(f"request {req.rid}: max_new must be >= 1")
        self.waiting.append(req)

    def _admit(self) -> list[GenRequest]:
        new: list[GenRequest] = []
        while self.waiting and len(self.running) + len(new) < self.max_running:
            r = self.waiting.popleft()
            r.admitted = self._admissions
            self._admissions += 1
            new.append(r)
        return new

    def _pack(self, new: list[GenRequest]) -> Packed:
        nd = len(self.running)
        ids = [r.output[-1] for r in self.running]
        pos = [r.context - 1 for r in self.running]
        lens = [len(r.prompt) for r in new]
        for r in new:
            ids += r.prompt
            pos += range(len(r.prompt))
        tmax = max(lens, default=0)
        index = None
        if len(new) > 1 and min(lens) != tmax:
            index = torch.tensor([i * tmax + t for i, n in enumerate(lens) for t in range(n)])
        rows, end = list(range(nd)), nd
        for n in lens:
            end += n
            rows.append(end - 1)
        return Packed(torch.tensor(ids), torch.tensor(pos), nd, torch.tensor(pos[:nd]),
                      lens, index, torch.tensor(rows))

    def step(self) -> list[GenRequest]:
        """Run one iteration; returns the requests that finished in it."""
        new = self._admit()
        if not new and not self.running:
            return []
        logits = self.model.iterate(self._pack(new), self.cache)
        if self.temperature > 0:
            probs = torch.softmax(logits / self.temperature, dim=-1)
            tokens = torch.multinomial(probs, 1, generator=self.generator).squeeze(1).tolist()
        else:
            tokens = logits.argmax(-1).tolist()
        self.running += new
        self.iterations += 1
        self.max_batch_seen = max(self.max_batch_seen, len(self.running))
        finished = []
        for r, tok in zip(self.running, tokens, strict=True):
            r.output.append(tok)
            stop = (tok == EOS and self.stop_on_eos) or len(r.output) >= r.max_new
            if stop or r.context >= self.max_len:
                finished.append(r)
        if finished:
            self._release(finished)
        for r in finished:
            if r.on_done is not None:
                r.on_done(r)
        return finished

    def _release(self, finished: list[GenRequest]) -> None:
        gone = {id(r) for r in finished}
        slots = sorted((i for i, r in enumerate(self.running) if id(r) in gone), reverse=True)
        for slot in slots:
            last = len(self.running) - 1
            if slot != last:
                n = self.running[last].context
                for kc, vc in self.cache:
                    kc[slot, :, :n] = kc[last, :, :n]
                    vc[slot, :, :n] = vc[last, :, :n]
                self.running[slot] = self.running[last]
            self.running.pop()

    def abort(self) -> list[GenRequest]:
        """Stop every request at this iteration boundary and return them: the waiting ones
        in queue order, then the running ones in admission order (rlsim's order), each with
        the tokens it generated so far. Their KV slots are free: the engine is empty."""
        out = [*self.waiting, *sorted(self.running, key=lambda r: r.admitted)]
        self.waiting.clear()
        self.running = []
        return out

    def run(self) -> None:
        """Step until no request is waiting or running."""
        while not self.idle:
            self.step()
