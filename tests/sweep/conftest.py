"""Shared fixture for the sweep tests: the tiny scenario as a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios import tiny, write


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    """The tiny test scenario (about 10 ms a run) as a YAML file."""
    return write(tmp_path, tiny(), "tiny.yaml")
