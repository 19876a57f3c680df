"""The base of the scenario schemas: frozen models that refuse unknown keys.

`Frozen` is what every section of a scenario (and of a fleet scenario) derives from: it
cannot change after validation, rejects misspelled fields instead of ignoring them,
validates defaults like given values, and refuses NaN and infinities, which would pass
every range check.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True,
                              allow_inf_nan=False)
