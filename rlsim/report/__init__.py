"""Readers of the record stream: metrics (summary.json), Perfetto export, tables."""
