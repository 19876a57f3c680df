"""Scenario schema, units, catalogues, YAML loading and overrides (a leaf package)."""
