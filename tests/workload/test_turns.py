"""`Turns`, a sample's turns as columns: a sequence of `Turn` that equals the tuple of the
same turns, slices to `Turns`, pickles, and is what a rollout reads its turns from."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlsim.workload.groups import Turn, Turns

turn_lists = st.lists(st.builds(Turn, st.integers(1, 10**6), st.floats(0, 1e4),
                                st.integers(0, 10**5)), min_size=1, max_size=40)


@given(turn_lists, st.integers(-45, 45), st.integers(-45, 45))
def test_turns_behave_as_the_tuple_of_their_turns(rows: list[Turn], i: int, j: int) -> None:
    as_tuple = tuple(rows)
    cols = Turns.of(rows)
    assert len(cols) == len(as_tuple) and tuple(cols) == as_tuple and list(cols) == rows
    assert cols == as_tuple and as_tuple == cols and hash(cols) == hash(as_tuple)
    assert cols[i:j] == as_tuple[i:j] and isinstance(cols[i:j], Turns)
    if -len(rows) <= i < len(rows):
        assert cols[i] == as_tuple[i] and type(cols[i]) is Turn
    else:
        with pytest.raises(IndexError):
            cols[i]
    assert sum(t.response_tokens + t.obs_tokens for t in cols) == \
        sum(cols.response_tokens) + sum(cols.obs_tokens)
    assert pickle.loads(pickle.dumps(cols)) == cols
    assert Turns.of(cols) is cols
    # kept only packed, the same turns (their columns read out when asked for)
    from rlsim.entities.rollout import pack_turns

    packed = Turns.from_packed(pack_turns(cols.response_tokens, cols.obs_tokens, cols.env_s))
    assert len(packed) == len(rows) and packed._response_tokens is None  # nothing read yet
    assert packed == cols and cols == packed and hash(packed) == hash(cols)
    assert (packed.response_tokens, packed.env_s, packed.obs_tokens) == \
        (cols.response_tokens, cols.env_s, cols.obs_tokens)
    assert packed[i:j] == as_tuple[i:j] and pickle.loads(pickle.dumps(packed)) == cols


def test_columns_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        Turns((1, 2), (0.5,), (3, 0))



def test_packed_turns_must_be_sixteen_bytes_a_turn() -> None:
    with pytest.raises(ValueError, match="16 a turn"):
        Turns((1, 2), (0.5, 0.0), (3, 0), packed=b"\0" * 16)
    assert Turns((1,), (0.0,), (0,), packed=b"\0" * 16).packed == b"\0" * 16
    assert Turns((1,), (0.0,), (0,)).packed is None
    with pytest.raises(ValueError, match="not whole turns of 16 bytes"):
        Turns.from_packed(b"\0" * 24)
    assert len(Turns.from_packed(b"")) == 0


def test_one_turn_row_layout_everywhere() -> None:
    """A packed turn is `TURN_ROW_BYTES` wherever it is made or read: the workload's
    arrays, `pack_turns` and a rollout's reads (a compiled constant of its own)."""
    from rlsim.entities import rollout
    from rlsim.workload.generator import _ROW_DTYPE
    from rlsim.workload.groups import TURN_ROW_BYTES

    assert _ROW_DTYPE.itemsize == rollout._ROW == TURN_ROW_BYTES
    assert len(rollout.pack_turns((1, 2), (3, 0), (0.5, 0.0))) == 2 * TURN_ROW_BYTES
