"""calibration.frameworks: the residuals a profile is fitted on and which parameters the
records identify."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration.frameworks import knobs_of, residuals
from calibration.realruns.table import Row


def _row(step: tuple[float, float], **phases: tuple[float, float]) -> Row:
    row = Row(id="r", framework="verl", model="m", gpus="8 x H100", mode="sync",
              measured_step_s=step[0], simulated_step_s=step[1])
    row.phases = dict(phases)
    return row


def test_each_record_counts_once_whatever_it_times():
    # every quantity 2x slow: log 2 each; k residuals weighted 1/sqrt(k) sum to (log 2)^2
    one = residuals(_row((10.0, 20.0)))
    four = residuals(_row((10.0, 20.0), gen=(4.0, 8.0), logprob=(1.0, 2.0),
                          update_actor=(3.0, 6.0), remainder=(2.0, 4.0)))
    assert len(one) == 1 and len(four) == 4  # the remainder is not compared
    assert sum(x * x for x in one) == pytest.approx(math.log(2) ** 2)
    assert sum(x * x for x in four) == pytest.approx(math.log(2) ** 2)


def test_the_solver_variables_map_to_the_knobs():
    k = knobs_of(["speed", "step_overhead"], np.array([math.log(0.5), 1.2]))
    assert k == {"train_speed": pytest.approx(0.5), "rollout_speed": pytest.approx(0.5),
                 "step_overhead": pytest.approx(12.0)}
    k = knobs_of(["rollout_speed", "train_speed"], np.array([0.0, math.log(2)]))
    assert k == {"rollout_speed": pytest.approx(1.0), "train_speed": pytest.approx(2.0)}
