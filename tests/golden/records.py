"""Golden records of the shipped scenarios: a hash of each one's summary and of its whole
record stream, so a refactor can show that every shipped scenario still gives identical
records (issue 21), or name the ones that changed.

`python -m tests.golden.records` writes tests/golden/records.json from the code as it is;
`python -m tests.golden.records --check` compares with it and lists every scenario whose
summary or records differ (exit 1). tests/golden/test_golden.py checks the quick ones in
`make test`; `make golden` checks all.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "records.json"
QUICK_S = 2.0  # a scenario under this (wall, on the machine that wrote the file) is quick


def shipped() -> list[Path]:
    """Every single-job scenario under scenarios/ (fleets and model files left out)."""
    out = []
    for p in sorted((ROOT / "scenarios").rglob("*.yaml")):
        if p.name.endswith(".model.yaml"):
            continue
        text = p.read_text()
        if "kind: fleet" in text:
            continue
        out.append(p)
    return out


def _digest(items: Any) -> str:
    return hashlib.sha256(json.dumps(items, sort_keys=True, default=repr)
                          .encode()).hexdigest()[:20]


def fingerprint(path: Path) -> dict[str, Any]:
    """Hashes of a scenario's summary and record stream (spans, instants, counters)."""
    from rlsim.api import simulate_file

    t0 = time.perf_counter()
    result = simulate_file(path)
    wall = time.perf_counter() - t0
    rec = result.recorder
    summary = {k: v for k, v in result.summary.items() if k not in ("wall_s", "events_per_s")}
    records = ([("span", s.track, s.name, repr(s.t0), repr(s.t1), s.attrs)
                for s in rec.spans]
               + [("instant", i.track, i.name, repr(i.t), i.attrs) for i in rec.instants]
               + [("counter", c.track, c.name, repr(c.t), repr(c.value))
                  for c in rec.counters])
    return {"summary": _digest(summary), "records": _digest(records),
            "count": len(records), "wall_s": round(wall, 2)}


def main(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    unknown = [a for a in argv if a not in ("--check", "--quick")]
    if unknown:
        print(f"records: unknown argument {unknown[0]!r} (use --check, --quick)",
              file=sys.stderr)
        return 2
    check = "--check" in argv
    quick_only = "--quick" in argv
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    out: dict[str, Any] = {}
    changed = []
    for p in shipped():
        key = str(p.relative_to(ROOT))
        if quick_only and golden.get(key, {}).get("wall_s", 1e9) > QUICK_S:
            continue
        try:
            fp = fingerprint(p)
        except Exception as err:  # a scenario rlsim refuses is kept as such
            # the checkout's path left out, so the file is the same from any clone
            fp = {"error": f"{type(err).__name__}: {err}".replace(str(ROOT), ".")[:200]}
        out[key] = fp
        if check:
            old = golden.get(key)
            same = old is not None and all(old.get(k) == fp.get(k)
                                           for k in ("summary", "records", "error"))
            if not same:
                changed.append(key)
            print(f"{'same' if same else 'CHANGED'} {key}", file=sys.stderr)
        else:
            print(f"{key}: {fp.get('wall_s', '-')} s", file=sys.stderr)
    if check:
        print(f"{len(changed)} of {len(out)} scenarios changed" +
              "".join(f"\n  {k}" for k in changed))
        return 1 if changed else 0
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN.relative_to(ROOT)} ({len(out)} scenarios)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
