"""The one record stream: Span, Instant and Counter records, the Recorder, and sinks."""

from rlsim.trace.records import CONTROLLER, Counter, Instant, Record, Recorder, Span

__all__ = ["CONTROLLER", "Counter", "Instant", "Record", "Recorder", "Span"]
