"""The quick shipped scenarios still give the records tests/golden/records.json holds (their
summary and whole record stream, hashed): a refactor that moves a record shows up here, by
scenario. `make golden` checks every shipped scenario; `python -m tests.golden.records`
rewrites the file when a change of results is intended (say so in the commit)."""

from __future__ import annotations

import json

import pytest

from tests.golden.records import GOLDEN, QUICK_S, ROOT, fingerprint

_GOLDEN = json.loads(GOLDEN.read_text())
QUICK = sorted(k for k, v in _GOLDEN.items() if "error" not in v and v["wall_s"] <= QUICK_S)


def test_every_shipped_scenario_has_a_golden_entry() -> None:
    from tests.golden.records import shipped

    names = {str(p.relative_to(ROOT)) for p in shipped()}
    assert names == set(_GOLDEN), "regenerate: python -m tests.golden.records"


@pytest.mark.parametrize("key", QUICK)
def test_quick_scenario_records_unchanged(key: str) -> None:
    fp = fingerprint(ROOT / key)
    old = _GOLDEN[key]
    assert (fp["summary"], fp["records"]) == (old["summary"], old["records"]), (
        f"{key}: records changed ({old['count']} -> {fp['count']}); if intended, regenerate "
        "tests/golden/records.json and say why in the commit")
