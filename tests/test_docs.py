"""Every code example in README.md and docs/*.md is checked, most of them by running it.

Each fenced block declares its language (python, bash or sh, yaml, json or text) so that none is
skipped by accident:
- python blocks run, in order, in one namespace per file, in a temporary working folder
  that holds links to the repository's scenarios/, traces/ and calibration/;
- bash blocks: every `rlsim` command parses against the real command line; the commands
  run there too, in the same folder as the file's python blocks (so a sweep written by one
  block is read by the next), made cheap (`cheap`: `--set steps=2`, grids cut to their
  first two values, one replicate). A block that cannot run here (needs torch or a GPU, minutes, a
  placeholder path, `make`) is preceded by `<!-- no-test: why -->`: it is still parsed
  (rlsim commands against the CLI, `make` targets against the Makefile, `python -m`
  modules against the package), not run;
- yaml blocks validate against `rlsim schema` (a whole fleet file, or the top-level
  sections of a single-job scenario or of its workload);
- json blocks parse; text blocks are not code, but a line that starts with `rlsim` there
  (a usage synopsis) names only options the command has;
- a log example for `rlsim fit` (a block preceded by `<!-- fit-log: NAME -->`) is written
  to a file NAME and read with `rlsim.fit.logs`: it reads as the json block preceded by
  `<!-- fit-log-reads: NAME -->` says (its keys, of `rlsim.fit.logs.summary`), and every
  log format the reader knows has such an example.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlsim import cli
from rlsim.config import json_schema

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = ("bash", "sh")
LANGS = {"python", *SHELL, "yaml", "json", "text"}
LINKED = ("scenarios", "traces", "calibration")  # what examples may read from the repo

_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)\s*$")
_NO_TEST = re.compile(r"^\s*<!--\s*no-test:\s*(.*?)\s*-->\s*$")
_FIT_LOG = re.compile(r"^\s*<!--\s*(fit-log|fit-log-reads):\s*(\S+)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    no_test: str | None  # the reason given by a `<!-- no-test: why -->` before the block
    fit_log: tuple[str, str] | None = None  # ("fit-log" or "fit-log-reads", NAME)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        body = "\n".join(ln[len(indent):] if ln.startswith(indent) else ln
                         for ln in lines[i + 1:j])
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = _NO_TEST.match(lines[k]) if k >= 0 else None
        log = _FIT_LOG.match(lines[k]) if k >= 0 else None
        out.append(Block(path, i + 1, lang, body, marker.group(1) if marker else None,
                         (log.group(1), log.group(2)) if log else None))
        i = j + 1
    return out


ALL = [b for f in FILES for b in blocks(f)]


def _ids(items: list[Any]) -> list[str]:
    return [getattr(x, "where", str(x)) for x in items]


# ------------------------------------------------------------------ commands in bash blocks
def commands(block: Block) -> list[list[str]]:
    """The block's commands as argument lists (continuation lines joined, comments gone)."""
    out = []
    for logical in re.sub(r"\\\n", " ", block.text).split("\n"):
        args = shlex.split(logical, comments=True)
        if args:
            out.append(args)
    return out


def _rlsim_args(args: list[str]) -> list[str] | None:
    """The arguments after `rlsim` (or `.venv/bin/rlsim`), or None for another command."""
    return args[1:] if Path(args[0]).name == "rlsim" else None


def _command_group() -> Any:
    import typer.main

    return typer.main.get_command(cli.whole_app())


def parse_rlsim(args: list[str]) -> dict[str, Any]:
    """Parse `rlsim ARGS` with the real command line's parser, without running it."""
    group = _command_group()
    if not args or args[0].startswith("-"):
        raise ValueError(f"no subcommand in `rlsim {' '.join(args)}`")
    ctx = group.make_context("rlsim", [args[0]], resilient_parsing=True)
    cmd = group.get_command(ctx, args[0])
    if cmd is None:
        raise ValueError(f"rlsim has no command {args[0]!r}")
    return dict(cmd.make_context(args[0], list(args[1:]), parent=ctx).params)


BASH = [b for b in ALL if b.lang in SHELL]
RLSIM_LINES = [(b, args) for b in BASH for c in commands(b)
               if (args := _rlsim_args(c)) is not None]


@pytest.mark.parametrize("block,args", RLSIM_LINES,
                         ids=[f"{b.where}:{a[0] if a else ''}" for b, a in RLSIM_LINES])
def test_rlsim_commands_parse(block: Block, args: list[str]) -> None:
    try:
        parse_rlsim(args)
    except Exception as err:  # the parser's usage errors have no public base class here
        message = err.format_message() if hasattr(err, "format_message") else str(err)
        pytest.fail(f"{block.where}: `rlsim {' '.join(args)}` does not parse: {message}")


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, re.MULTILINE))


def test_other_commands_name_real_make_targets_and_modules() -> None:
    import importlib.util

    targets = _make_targets()
    for block in BASH:
        for args in commands(block):
            name = Path(args[0]).name
            if name == "make":
                missing = [t for t in args[1:] if not t.startswith("-") and "=" not in t
                           and t not in targets]
                assert not missing, f"{block.where}: no Makefile target {missing}"
            elif name.startswith("python") and args[1:2] == ["-m"]:
                assert importlib.util.find_spec(args[2]) is not None, \
                    f"{block.where}: no module {args[2]}"


def test_every_block_declares_its_language_and_runs_or_says_why_not() -> None:
    for block in ALL:
        assert block.lang in LANGS, (
            f"{block.where}: give the block a language ({', '.join(sorted(LANGS))}): "
            f"```{block.lang or ''} is not checked")
        if block.no_test is not None:
            assert block.no_test, f"{block.where}: `<!-- no-test: -->` needs its reason"
    for block in BASH:
        if block.no_test is None:
            others = [c for c in commands(block) if _rlsim_args(c) is None]
            assert not others, (f"{block.where}: `{' '.join(others[0])}` cannot run in the "
                                "test; precede the block with `<!-- no-test: why -->`")


# ------------------------------------------------------------------ usage synopses
def _synopses() -> list[tuple[Block, str]]:
    """Usage lines of text blocks: a line that starts with `rlsim`, with its indented
    `[...]` continuation lines, comments cut; `rlsim a | rlsim b` is two."""
    found: list[tuple[Block, str]] = []
    for block in ALL:
        if block.lang != "text":
            continue
        current: str | None = None
        for raw in [*block.text.split("\n"), ""]:
            line = raw.split("#", 1)[0].rstrip()
            if line.startswith("rlsim "):
                if current is not None:
                    found.append((block, current))
                current = line
            elif current is not None and line[:1] in (" ", "\t") and line.strip()[:1] == "[":
                current += " " + line.strip()
            elif current is not None:
                found.append((block, current))
                current = None
    return [(b, part if part.startswith("rlsim ") else "rlsim " + part)
            for b, s in found for part in (x.strip() for x in s.split("| rlsim "))]


SYNOPSES = _synopses()


@pytest.mark.parametrize("block,line", SYNOPSES,
                         ids=[f"{b.where}:{s.split()[1]}" for b, s in SYNOPSES])
def test_usage_synopses_name_real_options(block: Block, line: str) -> None:
    group = _command_group()
    sub = line.split()[1]
    assert sub in group.commands, f"{block.where}: rlsim has no command {sub!r}"
    command = group.commands[sub]
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
    inner = getattr(command, "commands", None)
    if inner is None:  # a plain command
        targets = {sub: command}
    else:  # a group (`rlsim import verl|roll`): every named subcommand takes the options
        names = line.split()[2].split("|")
        missing = [n for n in names if n not in inner]
        assert not missing, f"{block.where}: `rlsim {sub}` has no command {missing}"
        targets = {f"{sub} {n}": inner[n] for n in names}
    for name, cmd in targets.items():
        options = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        assert named <= options, (f"{block.where}: `rlsim {name}` has no option "
                                  f"{sorted(named - options)}")


def test_synopses_are_found() -> None:
    subs = {s.split()[1] for _, s in SYNOPSES}
    assert {"run", "compare", "sweep", "report", "schema", "list"} <= subs


# ------------------------------------------------------------------ yaml and json blocks
def _schema(fleet: bool) -> dict[str, Any]:
    return json_schema.scenario_json_schema(fleet)


def _errors(schema: dict[str, Any], data: Any) -> list[str]:
    jsonschema = pytest.importorskip("jsonschema")
    return [f"{'.'.join(map(str, e.path)) or '(top)'}: {e.message}"
            for e in jsonschema.Draft202012Validator(schema).iter_errors(data)]


def _section_errors(schema: dict[str, Any], props: dict[str, Any], data: dict[str, Any]
                    ) -> list[str]:
    errors = []
    for key, value in data.items():
        sub = {"$defs": schema.get("$defs", {}), **props[key]}
        errors += [f"{key}.{e}" for e in _errors(sub, value)]
    return errors


YAML = [b for b in ALL if b.lang == "yaml"]


@pytest.mark.parametrize("block", YAML, ids=_ids(YAML))
def test_yaml_blocks_validate_against_the_schema(block: Block) -> None:
    if block.no_test is not None:
        pytest.skip(block.no_test)
    data = yaml.safe_load(block.text)
    assert isinstance(data, dict), f"{block.where}: not a YAML mapping"
    if data.get("kind") == "fleet":
        errors = _errors(_schema(True), data)
    else:
        single = _schema(False)
        workload = single["$defs"]["WorkloadConfig"]["properties"]
        model = single["$defs"]["ModelSpec"]
        if set(data) <= set(single["properties"]):
            errors = _section_errors(single, single["properties"], data)
        elif set(data) <= set(workload):
            errors = _section_errors(single, workload, data)
        elif set(data) <= set(model["properties"]):  # a model file
            errors = _errors({"$defs": single["$defs"], **model}, data)
        else:
            pytest.fail(f"{block.where}: keys {sorted(data)} are neither a scenario's, its "
                        "workload's nor a model file's; fix them or mark the block no-test "
                        "with why")
    assert errors == [], f"{block.where}: {errors}"


JSON = [b for b in ALL if b.lang == "json"]


@pytest.mark.parametrize("block", JSON, ids=_ids(JSON))
def test_json_blocks_parse(block: Block) -> None:
    if block.no_test is not None:
        pytest.skip(block.no_test)
    for line in (block.text.split("\n") if block.text.lstrip().startswith("{\"")
                 and "\n{" in block.text else [block.text]):
        if line.strip():
            json.loads(line)


# ------------------------------------------------------------------ rlsim fit's log examples
def _fit_blocks(kind: str) -> dict[str, Block]:
    found = [b for b in ALL if b.fit_log is not None and b.fit_log[0] == kind]
    names = [b.fit_log[1] for b in found if b.fit_log is not None]
    assert len(set(names)) == len(names), f"two `<!-- {kind}: -->` blocks share a name"
    return {name: b for name, b in zip(names, found, strict=True)}


FIT_LOGS, FIT_READS = _fit_blocks("fit-log"), _fit_blocks("fit-log-reads")


def _same(got: Any, want: Any) -> bool:
    """`want` (a documented reading) matches `got`: numbers to 1e-9, the rest exactly."""
    if isinstance(want, dict):
        return isinstance(got, dict) and set(got) == set(want) and all(
            _same(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            _same(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, int | float) and not isinstance(want, bool):
        return isinstance(got, int | float) and not isinstance(got, bool) and \
            abs(got - want) <= 1e-9 * max(1.0, abs(want))
    return bool(got == want)


def test_every_log_format_has_a_documented_example() -> None:
    from rlsim.fit.logs import FORMATS

    assert set(FIT_LOGS) == set(FIT_READS), (
        "each `<!-- fit-log: NAME -->` example needs its `<!-- fit-log-reads: NAME -->`")
    reads = [json.loads(b.text) for b in FIT_READS.values()]
    assert {r["format"] for r in reads} == set(FORMATS)
    assert {r["framework"] for r in reads} == {"verl", "roll"}


@pytest.mark.parametrize("name", sorted(FIT_LOGS))
def test_log_examples_read_as_documented(name: str, tmp_path: Path) -> None:
    from rlsim.fit.logs import read_log, summary

    block, reads = FIT_LOGS[name], FIT_READS[name]
    path = tmp_path / name
    path.write_text(block.text + "\n", encoding="utf-8")
    got = summary(read_log(path))
    got["dropped"] = {str(k): v for k, v in got["dropped"].items()}  # JSON's keys
    want = json.loads(reads.text)
    wrong = {k: got.get(k) for k, v in want.items() if not _same(got.get(k), v)}
    assert not wrong, f"{block.where}: reads as {wrong}, not as {reads.where} says"


# ------------------------------------------------------------------ running the examples
def cheap(args: list[str]) -> list[str]:
    """`rlsim ARGS` made cheap to run: two steps, grids cut to two values, one replicate,
    at most two random points, at most six advise trials; a fleet's job shapes profiled
    over one step (its jobs set their own steps)."""
    sub, out = args[0], list(args)
    if sub not in ("run", "compare", "sweep", "advise"):
        return out
    for i, arg in enumerate(out[:-1]):
        if arg == "--trials":
            out[i + 1] = str(min(int(out[i + 1]), 6))
        if arg == "--grid" and "=" in out[i + 1]:
            key, values = out[i + 1].split("=", 1)
            out[i + 1] = f"{key}={','.join(values.split(',')[:2])}"
        elif arg == "--reps":
            out[i + 1] = "1"
        elif arg == "--random":
            out[i + 1] = str(min(int(out[i + 1]), 2))
    scenarios = [a for a in out[1:] if a.endswith((".yaml", ".yml")) and Path(a).is_file()]
    fleets = [yaml.safe_load(Path(a).read_text()).get("kind") == "fleet" for a in scenarios]
    # Applied last, so it wins over the example's own --set.
    out += ["--set", "profile_steps=1" if any(fleets) else "steps=2"]
    return out


RUNNABLE = [f for f in FILES
            if any(b.no_test is None and b.lang in ("python", *SHELL) for b in blocks(f))]


@pytest.mark.parametrize("path", RUNNABLE, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE])
def test_doc_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in blocks(path):
        if block.no_test is not None or block.lang not in ("python", *SHELL):
            continue
        if block.lang == "python":
            try:
                exec(compile(block.text, block.where, "exec"), namespace)
            except Exception as err:
                pytest.fail(f"{block.where}: {type(err).__name__}: {err}")
            continue
        for args in commands(block):
            rlsim = _rlsim_args(args)
            assert rlsim is not None  # checked by the test above
            argv = cheap(rlsim)
            monkeypatch.setattr(sys, "argv", ["rlsim", *argv])
            with pytest.raises(SystemExit) as exc:
                cli.main()
                raise SystemExit(0)
            err = capsys.readouterr().err
            assert exc.value.code in (0, None), (
                f"{block.where}: `rlsim {' '.join(argv)}` exited {exc.value.code}: "
                f"{err.strip().splitlines()[-1:] if err.strip() else ''}")
