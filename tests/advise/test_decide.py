"""advise's decision rules, checked by hand: margins and ties over paired replicates, the
Pareto front, parameter importance (eta squared), constraints and objectives."""

from __future__ import annotations

import math

import pytest

from rlsim.advise.decide import Finalist, importance, margin, pareto_front, rank
from rlsim.advise.objectives import figures, objective, parse_constraint
from rlsim.config.errors import ScenarioError

TOKENS = objective("tokens_per_s")
STEP = objective("step_time")


def _f(key: str, *values: float, feasible: bool = True) -> Finalist:
    return Finalist(key, values, {}, feasible)


def test_margin_is_the_mean_paired_difference_and_half_its_range() -> None:
    m = margin(_f("a", 110, 120, 130), _f("b", 100, 100, 100), TOKENS)
    assert m.value == pytest.approx(20) and m.spread == pytest.approx(10)
    assert m.relative == pytest.approx(0.2) and not m.tie


def test_a_difference_within_the_spread_is_a_tie() -> None:
    # Paired: +30, -10, +10 -> mean 10, half-range 20.
    m = margin(_f("a", 130, 90, 110), _f("b", 100, 100, 100), TOKENS)
    assert m.value == pytest.approx(10) and m.spread == pytest.approx(20) and m.tie


def test_common_random_numbers_remove_the_shared_noise() -> None:
    # Both swing with the seed by +-50; A is always 5 better: a real difference, no tie.
    m = margin(_f("a", 55, 155, 105), _f("b", 50, 150, 100), TOKENS)
    assert m.value == pytest.approx(5) and m.spread == pytest.approx(0) and not m.tie


def test_for_a_minimized_objective_lower_is_better() -> None:
    m = margin(_f("a", 90, 90), _f("b", 100, 100), STEP)
    assert m.value == pytest.approx(10) and not m.tie
    ordered = rank([_f("slow", 100), _f("fast", 90), _f("infeasible", 10, feasible=False)], STEP)
    assert [f.key for f in ordered] == ["fast", "slow", "infeasible"]


def test_one_replicate_has_no_spread_and_only_equal_values_tie() -> None:
    assert margin(_f("a", 100), _f("b", 100), TOKENS).tie
    assert not margin(_f("a", 101), _f("b", 100), TOKENS).tie


def test_pareto_front_keeps_the_undominated() -> None:
    pts = {
        "fast": {"tokens_per_s": 100, "usd_per_1k_tokens": 2.0, "staleness": 1},
        "cheap": {"tokens_per_s": 50, "usd_per_1k_tokens": 1.0, "staleness": 1},
        "fresh": {"tokens_per_s": 80, "usd_per_1k_tokens": 2.5, "staleness": 0},
        "worse": {"tokens_per_s": 40, "usd_per_1k_tokens": 2.5, "staleness": 1},
    }
    assert pareto_front(pts) == ["cheap", "fast", "fresh"]


def test_importance_is_eta_squared() -> None:
    # y depends on a only: a explains all the variance, b none.
    rows = [({"a": 0, "b": 0}, 1.0), ({"a": 0, "b": 1}, 1.0),
            ({"a": 1, "b": 0}, 3.0), ({"a": 1, "b": 1}, 3.0)]
    assert importance(rows) == {"a": pytest.approx(1.0), "b": pytest.approx(0.0)}
    # A knob only some configs have: 'absent' is a level of its own.
    rows = [({"p": "x"}, 1.0), ({"p": "x"}, 1.0), ({"p": "y", "k": 1}, 5.0),
            ({"p": "y", "k": 2}, 5.0)]
    assert importance(rows)["k"] == pytest.approx(1.0)


def test_figures_price_trained_tokens() -> None:
    f = figures({"throughput.tokens_per_s": 1000.0, "cost.usd_per_hour": 36.0,
                 "staleness.max": 2.0, "step_time_s.mean": 10.0})
    assert f["usd_per_1k_tokens"] == pytest.approx(36 / 3600 / 1000 * 1000)
    assert f["staleness"] == 2 and f["step_time"] == 10
    assert math.isinf(figures({"cost.usd_per_hour": 1.0})["usd_per_1k_tokens"])


@pytest.mark.parametrize("text, key, op, bound", [
    ("max_staleness=1", "max_staleness", "<=", 1.0),
    ("usd_per_hour<=400", "usd_per_hour", "<=", 400.0),
    ("tokens_per_s>=2e4", "tokens_per_s", ">=", 20000.0),
    (" step_time = 300 ", "step_time", "<=", 300.0),
])
def test_constraints_parse(text: str, key: str, op: str, bound: float) -> None:
    c = parse_constraint(text)
    assert (c.key, c.op, c.bound) == (key, op, bound)


@pytest.mark.parametrize("text, fragment", [
    ("latency<=3", "unknown constraint key 'latency'"),
    ("max_staleness", "expected key<=value"),
    ("usd_per_hour<=cheap", "must be a number"),
    ("usd_per_hour<=inf", "must be finite"),
])
def test_bad_constraints_name_the_flag(text: str, fragment: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_constraint(text)
    assert err.value.field == "--constraint" and fragment in err.value.line()


def test_several_objectives_keep_their_order() -> None:
    from rlsim.advise.objectives import objectives

    assert [o.name for o in objectives("usd_per_1k_tokens,tokens_per_s")] == [
        "usd_per_1k_tokens", "tokens_per_s"]
    for bad in ("tokens_per_s,tokens_per_s", "tokens_per_s,", "tokens_per_s,speed"):
        with pytest.raises(ScenarioError):
            objectives(bad)


def test_unknown_objective_lists_the_choices() -> None:
    with pytest.raises(ScenarioError) as err:
        objective("speed")
    assert "tokens_per_s" in err.value.line() and err.value.field == "--objective"
