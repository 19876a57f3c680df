"""The one exception type for user mistakes in a scenario or on the command line.

A `ScenarioError` carries the dotted field path and a message that says how to fix it; the
CLI prints it as one line and exits with code 2. Internal misuse raises anything else.
"""

from __future__ import annotations


class ScenarioError(ValueError):
    """Bad user input: `field` is the dotted path into the scenario (or a CLI option)."""

    def __init__(self, field: str, message: str, source: str | None = None) -> None:
        self.field = field
        self.message = message
        self.source = source
        super().__init__(self.line())

    def line(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.field}: {self.message}" if self.field else f"{where}{self.message}"
