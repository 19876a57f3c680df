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
        # the arguments themselves, so that a copy built from them is the same error: SimPy
        # re-raises a failed process's exception as type(err)(*err.args), pickle (a sweep's
        # worker processes) rebuilds it the same way
        super().__init__(field, message, source)

    def __str__(self) -> str:
        return self.line()

    def line(self) -> str:
        """The error as one line: a line break inside it (a value quoted from the user's
        file, e.g. a carriage return) is written as its escape."""
        where = f"{self.source}: " if self.source else ""
        text = (f"{where}{self.field}: {self.message}" if self.field
                else f"{where}{self.message}")
        return text.translate(_LINE_BREAKS)


# What str.splitlines() breaks on, each as its Python escape.
_LINE_BREAKS = {ord(c): c.encode("unicode_escape").decode("ascii")
                for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}
