"""The live policy's tokenizer: one token per character, plus PAD, BOS and EOS.

A character vocabulary keeps every task exactly representable (no unknown tokens, no merges
to learn) and makes lengths easy to reason about: a response of n characters is n + 1
tokens with its EOS.
"""

from __future__ import annotations

from collections.abc import Iterable

PAD, BOS, EOS = 0, 1, 2
_SPECIALS = ("<pad>", "<bos>", "<eos>")
CHARS = "abcdefghijklmnopqrstuvwxyz0123456789:>$=,!? \n"


class Tokenizer:
    """Characters of `CHARS` <-> token ids (3 + index)."""

    def __init__(self, chars: str = CHARS) -> None:
        if len(set(chars)) != len(chars):
            raise ValueError("tokenizer characters must be unique")
        self.chars = chars
        self._ids = {c: i + len(_SPECIALS) for i, c in enumerate(chars)}

    @property
    def vocab_size(self) -> int:
        return len(_SPECIALS) + len(self.chars)

    def encode(self, text: str) -> list[int]:
        try:
            return [self._ids[c] for c in text]
        except KeyError as err:
            raise ValueError(
                f"character {err.args[0]!r} is not in the tokenizer's vocabulary") from None

    def decode(self, ids: Iterable[int]) -> str:
        """Text of the ids, stopping at EOS; PAD and BOS are dropped."""
        out = []
        n = len(_SPECIALS)
        for i in ids:
            if i == EOS:
                break
            if i >= n:
                out.append(self.chars[i - n])
        return "".join(out)
