"""Reading a veRL launch script: the Hydra `key=value` overrides of its trainer command.

Owns `parse_launch_script`, which evaluates the small part of bash that veRL's example and
recipe scripts use to build their trainer command, and returns the command's entry point
(`python3 -m verl.trainer.main_ppo`, also under `torchrun ... -m`, `ray job submit ... --
python3 -m ...`, `srun`, `nohup`, env-prefixed), its `--config-name` and its overrides in
order, each with its script line and its value as a YAML scalar.

What is evaluated: comments, `\\` line continuations, quoting ('...', "...", `\\x`),
variables set in the script (`X=1`, `export X=1`, arrays `X=(a b)` with "${X[@]}"),
`$X` / `${X}` / `${X:-default}` / `${X-default}` / `${X:=default}` / `${X:+alt}` /
`${X//old/new}` / `${#X}`, integer arithmetic `$((a * b))`, and `if [ ... ]` / `[[ ... ]]`
comparisons. Variables the script does not set (the caller's environment: $HOME, an
`NNODES` exported before the launch) are unknown, so `${X:-default}` takes its default;
an override whose value still needs an unknown one keeps the text and names it in
`Override.unresolved`, and only the keys an importer reads turn that into an error.
The script's own arguments (`$@`, `$1`) are taken as none. Other commands (echo, mkdir,
ray start, pip, ...) are skipped; a loop, `case` or function body that sets variables or
runs the trainer, and an `if` whose condition cannot be evaluated, raise a ScenarioError
naming FILE:LINE, as do syntax errors (an unterminated quote, a script that ends inside a
line continuation).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlsim.config.errors import ScenarioError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
# Commands that only declare or export variables: their `NAME=value` words are assignments.
_DECLARE = {"export", "declare", "typeset", "local", "readonly"}
_LOOPS = {"for", "while", "until", "select"}
_HYDRA_FLAGS = {"--config-path", "--config-name", "-cp", "-cn", "--config-dir", "-cd"}


@dataclass(frozen=True)
class Override:
    """One `key=value` override of the trainer command."""

    key: str                 # without Hydra's `+` / `++` prefix
    value: Any               # the value as Hydra reads it: int, float, bool, None, str, list
    text: str                # the value's text after the shell expanded it
    line: int                # script line of the override
    added: bool = False      # written `+key=` / `++key=` (Hydra: a key not in the schema)
    unresolved: tuple[str, ...] = ()  # why the text is not what the job saw, if it may not be


@dataclass(frozen=True)
class LaunchScript:
    """The trainer command of a launch script."""

    path: Path
    module: str                      # Python entry point, e.g. verl.trainer.main_ppo
    line: int                        # script line where the command starts
    config_name: str | None          # Hydra --config-name (without .yaml)
    overrides: dict[str, Override]   # by key; a key given twice keeps the last (as Hydra)
    notes: tuple[str, ...] = ()      # `FILE:LINE: ...` of what was skipped (a `source`)

    def values(self) -> dict[str, Any]:
        """The overrides as a flat `{key: value}` dict."""
        return {k: o.value for k, o in self.overrides.items()}


def hydra_value(text: str) -> Any:
    """A Hydra override value as Hydra parses it: null, true/false (any case), an int, a
    float (`1e-6` too, which YAML 1.1 leaves a string), a `[a,b]` list or `{k: v}` dict, a
    quoted string, else the text."""
    t = text.strip()
    low = t.lower()
    if low == "null":
        return None
    if low in ("true", "false"):
        return low == "true"
    if re.fullmatch(r"[-+]?\d+", t):
        return int(t)
    if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?(inf|nan)", low):
        return float(t)
    if t[:1] in "[{'\"" and t:
        try:
            return yaml.safe_load(t)
        except yaml.YAMLError:
            return t
    return t


# --- lexing -------------------------------------------------------------------------------

@dataclass
class _Tok:
    kind: str              # word | op | redir | array
    text: str              # raw word (quotes kept), operator, or NAME= of an array
    line: int
    items: list[_Tok] = field(default_factory=list)  # array elements


class _Lexer:
    """Splits a script into raw words (quotes and expansions kept for later expansion) and
    operators, each with its line; `\\` + newline joins lines."""

    def __init__(self, text: str, path: Path) -> None:
        self.s, self.i, self.line, self.path = text, 0, 1, path

    def fail(self, line: int, msg: str) -> ScenarioError:
        return ScenarioError(f"{self.path}:{line}", msg)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def tokens(self) -> list[_Tok]:
        out: list[_Tok] = []
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t\r":
                self.i += 1
            elif c == "\\" and self.peek(1) in ("\n", ""):
                # A continuation; one on the last line ends the command, as in bash (some
                # of veRL's own scripts end that way).
                self.i += 2
                self.line += 1
            elif c == "#":
                while self.i < len(self.s) and self.peek() != "\n":
                    self.i += 1
            elif c == "\n":
                out.append(_Tok("op", "\n", self.line))
                self.i += 1
                self.line += 1
            elif c in ";&|":
                two = c + self.peek(1)
                if two in (";;", "&&", "||") or (c == "&" and self.peek(1) == ">"):
                    if two == "&>":
                        self.i += 2
                        out.append(_Tok("redir", "&>", self.line))
                        continue
                    self.i += 2
                    out.append(_Tok("op", two, self.line))
                else:
                    self.i += 1
                    out.append(_Tok("op", c, self.line))
            elif c in "<>":
                out.append(self.redirect(""))
            elif c in "()":
                self.i += 1
                out.append(_Tok("op", c, self.line))
            else:
                out.append(self.word())
        return out

    def redirect(self, fd: str) -> _Tok:
        line = self.line
        start = self.i
        self.i += 1
        while self.peek() in "<>&":
            self.i += 1
        return _Tok("redir", fd + self.s[start:self.i], line)

    def word(self) -> _Tok:
        line, start = self.line, self.i
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t\r\n;&|()<>":
                if c in "<>" and self.s[start:self.i].isdigit():
                    return self.redirect(self.s[start:self.i])
                if c == "(" and _ASSIGN.fullmatch(self.s[start:self.i]):
                    return self.array(self.s[start:self.i], line)
                break
            if c == "\\":
                if self.peek(1) in ("\n", ""):
                    break  # a continuation ends the word; tokens() skips it
                self.i += 2
            elif c == "'":
                self.single_quote()
            elif c == '"':
                self.double_quote()
            elif c == "$" and self.peek(1) in "({":
                self.dollar()
            elif c == "`":
                self.backquote()
            else:
                self.i += 1
        return _Tok("word", self.s[start:self.i], line)

    def array(self, head: str, line: int) -> _Tok:
        self.i += 1  # the "("
        tok = _Tok("array", head, line)
        while True:
            while self.peek() in " \t\r\n" and self.i < len(self.s):
                if self.peek() == "\n":
                    self.line += 1
                self.i += 1
            c = self.peek()
            if c == "":
                raise self.fail(line, f"array {head}( is never closed with `)`: is the "
                                "script truncated?")
            if c == ")":
                self.i += 1
                return tok
            if c == "#":
                while self.i < len(self.s) and self.peek() != "\n":
                    self.i += 1
            elif c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
            else:
                tok.items.append(self.word())

    def single_quote(self) -> None:
        self._skip_quoted("'", "unterminated ' quote (opened here): is the script truncated?")

    def _skip_quoted(self, quote: str, unterminated: str) -> None:
        """Past a quote that nothing inside escapes (' or `), counting its lines."""
        line = self.line
        j = self.s.find(quote, self.i + 1)
        if j < 0:
            raise self.fail(line, unterminated)
        self.line += self.s.count("\n", self.i, j)
        self.i = j + 1

    def double_quote(self) -> None:
        line = self.line
        self.i += 1
        while True:
            c = self.peek()
            if c == "":
                raise self.fail(line, 'unterminated " quote (opened here): is the script '
                                "truncated?")
            if c == '"':
                self.i += 1
                return
            if c == "\\":
                if self.peek(1) == "\n":
                    self.line += 1
                self.i += 2
            elif c == "$" and self.peek(1) in "({":
                self.dollar()
            elif c == "`":
                self.backquote()
            else:
                if c == "\n":
                    self.line += 1
                self.i += 1

    def dollar(self) -> None:
        """Skip `$(...)`, `$((...))` or `${...}`, nesting and quotes included."""
        line = self.line
        opener = self.peek(1)
        closer = ")" if opener == "(" else "}"
        self.i += 2
        depth = 1
        while depth:
            c = self.peek()
            if c == "":
                raise self.fail(line, f"unterminated ${opener}...{closer}: is the script "
                                "truncated?")
            if c == "'" and opener == "(":
                self.single_quote()
                continue
            if c == '"':
                self.double_quote()
                continue
            if c == "\\":
                self.i += 2
                continue
            if c == "$" and self.peek(1) in "({":
                self.dollar()
                continue
            if c == opener:
                depth += 1
            elif c == closer:
                depth -= 1
            elif c == "\n":
                self.line += 1
            self.i += 1

    def backquote(self) -> None:
        self._skip_quoted("`", "unterminated ` quote: is the script truncated?")


# --- statements ---------------------------------------------------------------------------

@dataclass
class _Stmt:
    words: list[_Tok]
    line: int
    after: str | None = None  # "&&" / "||": runs only if the previous one succeeded / failed


def _statements(tokens: list[_Tok]) -> list[_Stmt]:
    """Simple commands, split at newlines, `;`, `&&`, `||`, `|` and `&`; redirections and
    their targets dropped; a leading `then` / `do` / `else` becomes a statement of its own."""
    out: list[_Stmt] = []
    cur: list[_Tok] = []
    skip_target = False
    keywords = {"then", "do", "else", "{"}

    after: str | None = None

    def flush() -> None:
        if cur:
            out.append(_Stmt(list(cur), cur[0].line, after))
            cur.clear()

    for tok in tokens:
        if skip_target:
            skip_target = False
            if tok.kind == "word":
                continue
        if tok.kind == "redir":
            skip_target = True  # `> log`, `2>&1`, `&> log`: the next word is the target
            continue
        if tok.kind == "op" and tok.text not in "()":
            flush()
            after = tok.text if tok.text in ("&&", "||") else None
            continue
        if tok.kind == "op":  # ( and ): subshells, function headers, case patterns
            cur.append(_Tok("word", tok.text, tok.line))
            continue
        if not cur and tok.kind == "word" and tok.text in keywords:
            out.append(_Stmt([tok], tok.line))
            after = None
            continue
        cur.append(tok)
    flush()
    return out


def _head(stmt: _Stmt) -> str:
    """The command word of a statement (after leading NAME=value assignments)."""
    for tok in stmt.words:
        if tok.kind == "array" or _ASSIGN.match(tok.text):
            continue
        return tok.text
    return ""


# --- the evaluator ------------------------------------------------------------------------

@dataclass
class _Var:
    """A shell variable: a string, or an array whose elements keep their own reasons."""

    value: str | list[str]
    unresolved: tuple[str, ...] = ()          # for a string
    item_unresolved: tuple[tuple[str, ...], ...] = ()  # for an array, per element


Field = tuple[str, tuple[str, ...]]  # an expanded word: its text, why it may be unresolved


class _Unsupported(Exception):
    """An expansion this evaluator does not do; the reason names it."""


class _Fields:
    """The fields one word expands to, built piece by piece: unquoted pieces are split on
    whitespace (when `split`), quoted ones are not; each field keeps the reasons its
    pieces could not be resolved."""

    def __init__(self, sh: _Shell, split: bool) -> None:
        self.sh, self.split = sh, split
        self.out: list[Field] = []
        self.cur: list[str] = []
        self.have = False  # the current field exists even if empty ("" or '')
        self.mark = len(sh.unresolved)

    def close(self) -> None:
        why = tuple(dict.fromkeys(self.sh.unresolved[self.mark:]))
        self.out.append(("".join(self.cur), why))
        self.cur, self.have, self.mark = [], False, len(self.sh.unresolved)

    def add(self, text: str, splittable: bool) -> None:
        if not splittable or not self.split:
            self.cur.append(text)
            self.have = True
            return
        for k, part in enumerate(re.split(r"[ \t\n]+", text)):
            if k > 0 and (self.cur or self.have):
                self.close()
            if part:
                self.cur.append(part)
                self.have = True

    def items(self, items: list[str], why: list[tuple[str, ...]], quoted: bool) -> None:
        """`${X[@]}`: one field per element (quoted) or per word of them (unquoted)."""
        for k, item in enumerate(items):
            if k and quoted:
                self.close()
            self.sh.unresolved.extend(why[k] if k < len(why) else ())
            self.add(item, not quoted)

    def finish(self) -> list[Field]:
        if self.cur or self.have:
            self.close()
        return self.out


class _Shell:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.env: dict[str, _Var] = {}
        self.unresolved: list[str] = []  # reasons collected while expanding
        self.notes: list[str] = []       # what was skipped that might have mattered

    def fail(self, line: int, msg: str) -> ScenarioError:
        return ScenarioError(f"{self.path}:{line}", msg)

    # -- expansion --

    def expand(self, raw: str, split: bool = True) -> list[Field]:
        """The fields a raw word expands to (quotes removed)."""
        f = _Fields(self, split)
        i = 0
        while i < len(raw):
            c = raw[i]
            if c == "'":
                j = raw.index("'", i + 1)
                f.add(raw[i + 1:j], False)
                i = j + 1
            elif c == '"':
                i = self._double(raw, i + 1, f)
            elif c == "\\":
                f.add(raw[i + 1:i + 2], False)
                i += 2
            elif c == "$":
                i = self._dollar(raw, i, f, quoted=False)
            elif c == "`":
                j = raw.index("`", i + 1)
                f.add(self._command_output(raw[i + 1:j]), False)
                i = j + 1
            else:
                f.add(c, False)
                i += 1
        return f.finish()

    def _double(self, raw: str, i: int, f: _Fields) -> int:
        """The "..." starting at raw[i] (after the quote) into f; the index after it."""
        start_fields, start_cur = len(f.out), len(f.cur)
        only_arrays = True
        while raw[i] != '"':
            c = raw[i]
            if c == "\\" and raw[i + 1] in '$`"\\\n':
                if raw[i + 1] != "\n":
                    f.add(raw[i + 1], False)
                i += 2
            elif c == "$":
                array = re.match(r"\$(@|\{@\}|\{[A-Za-z_]\w*\[@\]\})", raw[i:])
                i = self._dollar(raw, i, f, quoted=True)
                only_arrays = only_arrays and bool(array)
                continue
            elif c == "`":
                j = raw.index("`", i + 1)
                f.add(self._command_output(raw[i + 1:j]), False)
                i = j + 1
            else:
                f.add(c, False)
                i += 1
            only_arrays = False
        # "" is an empty field, but "${X[@]}" of an empty array is no field at all.
        if not only_arrays or len(f.out) > start_fields or len(f.cur) > start_cur:
            f.have = True
        return i + 1

    def _command_output(self, cmd: str) -> str:
        self.unresolved.append(f"$({cmd.strip()}) is a command's output")
        return "$(" + re.sub(r"\s+", "", cmd) + ")"  # no spaces: it stays one field

    def _dollar(self, raw: str, i: int, f: _Fields, quoted: bool) -> int:
        """Expand the `$...` at raw[i] into f; the index after it."""
        nxt = raw[i + 1:i + 2]
        if raw.startswith("$((", i):
            end = _matching(raw, i + 1, "(", ")")
            f.add(self._arith(raw[i + 3:end - 1]), not quoted)
            return end + 1
        if nxt == "(":
            end = _matching(raw, i + 1, "(", ")")
            f.add(self._command_output(raw[i + 2:end]), False)
            return end + 1
        if nxt == "{":
            end = _matching(raw, i + 1, "{", "}")
            body = raw[i + 2:end]
            arr = re.fullmatch(r"([A-Za-z_]\w*)\[@\]", body)
            if arr or body == "@":
                items, why = self._array(arr.group(1) if arr else None)
                f.items(items, why, quoted)
            else:
                f.add(self._brace(body), not quoted)
            return end + 1
        m = _NAME.match(raw, i + 1)
        if m:
            f.add(self._get(m.group(0)), not quoted)
            return m.end()
        if nxt in ("@", "*") or nxt.isdigit():
            return i + 2  # the script's arguments: taken as none
        if nxt == "#":
            f.add("0", False)
            return i + 2
        if nxt in ("$", "?", "!", "-"):
            self.unresolved.append(f"${nxt} is known only when the script runs")
            f.add("$" + nxt, False)
            return i + 2
        f.add("$", False)  # a lone $ is literal
        return i + 1

    def _array(self, name: str | None) -> tuple[list[str], list[tuple[str, ...]]]:
        if name is None:
            return [], []  # "$@": the script's arguments, taken as none
        var = self.env.get(name)
        if var is None:
            self.unresolved.append(f"${name} is not set in the script")
            return [], []
        if isinstance(var.value, str):
            return [var.value], [var.unresolved]
        return list(var.value), list(var.item_unresolved)

    def _get(self, name: str) -> str:
        var = self.env.get(name)
        if var is None:
            self.unresolved.append(f"${name} is not set in the script (it comes from the "
                                   "environment)")
            return "${" + name + "}"
        if isinstance(var.value, str):
            self.unresolved.extend(var.unresolved)
            return var.value
        self.unresolved.extend(var.item_unresolved[0] if var.item_unresolved else ())
        return var.value[0] if var.value else ""

    def _text(self, name: str) -> str | None:
        """The variable as one string (an array's elements joined), None when unset."""
        var = self.env.get(name)
        if var is None:
            return None
        return var.value if isinstance(var.value, str) else " ".join(var.value)

    def _brace(self, body: str) -> str:
        """`${...}` other than an array's [@]."""
        if body.startswith("#") and _NAME.fullmatch(body[1:]):
            text = self._text(body[1:])
            if text is None:
                self.unresolved.append(f"${body[1:]} is not set in the script")
                return "0"
            var = self.env[body[1:]]
            return str(len(var.value))
        m = _NAME.match(body) or re.match(r"\d+", body)
        if not m:
            if body == "*":
                return ""
            raise _Unsupported(f"${{{body}}}")
        name, rest = m.group(0), body[m.end():]
        positional = name.isdigit()  # the script's arguments: taken as none
        arr = re.fullmatch(r"\[(\*|\d+)\]", rest)
        if arr and not positional:
            items, why = self._array(name)
            if arr.group(1) == "*":
                for w in why:
                    self.unresolved.extend(w)
                return " ".join(items)
            k = int(arr.group(1))
            if k < len(items):
                self.unresolved.extend(why[k] if k < len(why) else ())
                return items[k]
            return ""
        if not rest:
            return "" if positional else self._get(name)
        value = None if positional else self._text(name)
        for op in (":-", ":=", ":+", "-", "=", "+"):
            if rest.startswith(op):
                word = rest[len(op):]
                is_set = value is not None and (value != "" or not op.startswith(":"))
                if op.endswith("+"):
                    return self._word_text(word) if is_set else ""
                if is_set:
                    self._get(name)  # its reasons
                    return str(value)
                text = self._word_text(word)
                if op.endswith("=") and not positional:
                    self.env[name] = _Var(text, tuple(self.unresolved))
                return text
        sub = re.fullmatch(r"(//?)([^/]*)/?(.*)", rest, re.S)
        if sub and not positional and not re.search(r"[*?\[]", sub.group(2)):
            text = self._get(name)
            pat, rep = sub.group(2), self._word_text(sub.group(3))
            return text.replace(pat, rep) if sub.group(1) == "//" else text.replace(pat, rep, 1)
        raise _Unsupported(f"${{{body}}}")

    def _word_text(self, word: str) -> str:
        return " ".join(text for text, _ in self.expand(word, split=False))

    def _arith(self, expr: str) -> str:
        before = len(self.unresolved)
        text = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: self._num(m.group(1)),
                      expr)
        text = _NAME.sub(lambda m: self._num(m.group(0)), text)
        if len(self.unresolved) > before:
            return "$((" + re.sub(r"\s+", "", expr) + "))"  # no spaces: it stays one field
        try:
            return str(_int_eval(ast.parse(text.strip(), mode="eval").body))
        except (SyntaxError, _Unsupported, ZeroDivisionError):
            raise _Unsupported(f"$(({expr}))") from None

    def _num(self, name: str) -> str:
        var = self.env.get(name)
        if var is None or not isinstance(var.value, str):
            self.unresolved.append(f"${name} is not set in the script")
            return "0"
        self.unresolved.extend(var.unresolved)
        if not re.fullmatch(r"\s*-?\d+\s*", var.value):
            self.unresolved.append(f"${name} ({var.value!r}) is not an integer")
            return "0"
        return var.value.strip()

    # -- one word, with errors mapped to the script line --

    def fields(self, tok: _Tok, split: bool = True) -> list[Field]:
        self.unresolved = []
        try:
            return self.expand(tok.text, split)
        except _Unsupported as err:
            raise self.fail(tok.line, f"the shell expansion {err.args[0]} is not one rlsim "
                            "evaluates; replace it with its value") from None

    def text(self, tok: _Tok) -> Field:
        """A word expanded without splitting (an assignment's value): one field."""
        got = self.fields(tok, split=False)
        return ("".join(t for t, _ in got),
                tuple(dict.fromkeys(w for _, why in got for w in why)))

    # -- statements --

    def assign(self, tok: _Tok) -> None:
        m = _ASSIGN.match(tok.text)
        assert m
        name, append = m.group(1), m.group(2) == "+"
        old = self.env.get(name)
        if tok.kind == "array":
            items: list[str] = []
            why: list[tuple[str, ...]] = []
            for item in tok.items:
                for text, w in self.fields(item):
                    items.append(text)
                    why.append(w)
            if append and old is not None and isinstance(old.value, list):
                items, why = old.value + items, list(old.item_unresolved) + why
            self.env[name] = _Var(items, (), tuple(why))
            return
        value, unres = self.text(_Tok("word", tok.text[m.end():], tok.line))
        if append and old is not None and isinstance(old.value, str):
            value, unres = old.value + value, old.unresolved + unres
        self.env[name] = _Var(value, unres)

    def test(self, words: list[str], line: int) -> bool:
        """`[ ... ]` / `[[ ... ]]` / `test ...` with one comparison, `!` and -z / -n."""
        neg = False
        if words and words[0] == "!":
            neg, words = True, words[1:]
        if words[:1] in (["["], ["test"]) or words[:1] == ["[["]:
            close = {"[": "]", "[[": "]]", "test": None}[words[0]]
            inner = words[1:-1] if close else words[1:]
            if close and words[-1:] != [close]:
                raise self.fail(line, f"the condition {' '.join(words)} is not closed")
            return neg != self._compare(inner, line)
        raise self.fail(line, f"the condition `{' '.join(words)}` is a command rlsim does not "
                        "run; only [ ... ] comparisons are evaluated")

    def _compare(self, w: list[str], line: int) -> bool:
        if w[:1] == ["!"]:
            return not self._compare(w[1:], line)
        if len(w) == 2 and w[0] in ("-z", "-n"):
            return (w[1] == "") == (w[0] == "-z")
        if len(w) == 1:
            return w[0] != ""
        if len(w) == 3:
            a, op, b = w
            if op in ("=", "=="):
                return a == b
            if op == "!=":
                return a != b
            ints = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__,
                    "-le": int.__le__, "-gt": int.__gt__, "-ge": int.__ge__}
            if op in ints:
                try:
                    return bool(ints[op](int(a), int(b)))
                except ValueError:
                    raise self.fail(line, f"{a!r} {op} {b!r}: not integers") from None
        raise self.fail(line, f"the test `{' '.join(w)}` is not one rlsim evaluates (it "
                        "compares strings and integers only)")


def _matching(raw: str, i: int, opener: str, closer: str) -> int:
    """Index of the `closer` matching the `opener` at raw[i] (quotes skipped)."""
    depth = 0
    j = i
    while j < len(raw):
        c = raw[j]
        if c == "\\":
            j += 2
            continue
        if c == "'" and opener == "(":
            j = raw.index("'", j + 1) + 1
            continue
        if c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise _Unsupported(raw[i - 1:])


def _int_eval(node: ast.expr) -> int:
    """Bash integer arithmetic: + - * / (truncating) % ** and parentheses."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _int_eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _int_eval(node.left), _int_eval(node.right)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, (ast.Div, ast.FloorDiv)):
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        if isinstance(node.op, ast.Mod):
            r = abs(a) % abs(b)
            return r if a >= 0 else -r
        if isinstance(node.op, ast.Pow) and b >= 0:
            return int(a**b)
    raise _Unsupported("arithmetic")


# --- finding the trainer command ----------------------------------------------------------

def _entry(argv: list[str]) -> tuple[str, int] | None:
    """(module, index of its first argument) when argv runs a veRL or recipe module."""
    for k, word in enumerate(argv):
        mod = None
        if word == "-m" and k + 1 < len(argv):
            mod, first = argv[k + 1], k + 2
        elif word.endswith(".py") and k > 0 and re.search(r"python[0-9.]*$", argv[k - 1]):
            mod = re.sub(r"^.*?(?=(verl|recipe)/)", "", word)[:-3].replace("/", ".")
            first = k + 1
        # A trainer's entry point (main_ppo, main_dapo, fully_async_main, *_trainer), not a
        # helper module run before it (data preprocessing, model merging).
        if mod and mod.startswith(("verl.", "recipe.")) and re.search(
                r"main|trainer", mod.rsplit(".", 1)[-1]):
            return mod, first
    return None


def _might_matter(stmts: list[_Stmt]) -> bool:
    """Whether a block sets variables or may run the trainer (so skipping it could change
    the result)."""
    for st in stmts:
        head = _head(st)
        if head in _DECLARE or head in ("unset", ":", "eval", "read"):
            return True
        if any(t.kind == "array" or (i == 0 and _ASSIGN.match(t.text))
               for i, t in enumerate(st.words)):
            return True
        if any(re.search(r"(^|[/ .])(verl|recipe)[./]", t.text) for t in st.words):
            return True
    return False


def parse_launch_script(path: Path, text: str | None = None) -> LaunchScript:
    """The trainer command of the launch script at `path` (`text`: its content, if read)."""
    src = path.read_text() if text is None else text
    stmts = _statements(_Lexer(src, path).tokens())
    sh = _Shell(path)
    found = _run(sh, stmts, 0, len(stmts))
    if found is None:
        raise ScenarioError(f"{path}:1", "no veRL trainer command found (python3 -m "
                            "verl.trainer.main_ppo key=value ...); is the script truncated?")
    return found


def _run(sh: _Shell, stmts: list[_Stmt], k: int, end: int) -> LaunchScript | None:
    """Execute stmts[k:end]; the trainer command when one runs."""
    while k < end:
        st = stmts[k]
        head = st.words[0].text
        if head == "if":
            k, found = _run_if(sh, stmts, k)
        elif head in _LOOPS or head == "case" or head in ("function", "{") or (
                len(st.words) >= 3 and st.words[1].text == "(" and st.words[2].text == ")"):
            k, found = _skip_block(sh, stmts, k)
        elif head in ("then", "do", "else", "fi", "done", "esac", "}", "elif"):
            raise sh.fail(st.line, f"`{head}` without its opening statement")
        elif st.after and not _runs(sh, stmts[k - 1], st):
            k += 1
            continue
        else:
            ran = _simple(sh, st)
            if ran == "exit":
                return None
            found = ran if isinstance(ran, LaunchScript) else None
            k += 1
        if isinstance(found, LaunchScript):
            return found
    return None


def _runs(sh: _Shell, prev: _Stmt, st: _Stmt) -> bool:
    """Whether `prev && st` / `prev || st` runs st: a `[ ... ]` test before it is evaluated
    (when st matters); any other command is taken to succeed."""
    if _head(prev) not in ("[", "[[", "test", "!") or not _might_matter([st]):
        return st.after == "&&"
    return sh.test(_condition(sh, prev.words, prev.line), prev.line) == (st.after == "&&")


def _condition(sh: _Shell, toks: list[_Tok], line: int) -> list[str]:
    """A condition's words, expanded; an error when one needs what only the run knows."""
    words: list[str] = []
    for tok in toks:
        for text, why in sh.fields(tok):
            if why:
                raise sh.fail(line, f"the condition depends on something unknown before "
                              f"the job runs: {why[0]}")
            words.append(text)
    return words


def _skip_block(sh: _Shell, stmts: list[_Stmt], k: int) -> tuple[int, None]:
    """Skip the loop, `case`, function or `{ }` block at stmts[k]; an error if it sets
    variables or may run the trainer (what it does is not evaluated)."""
    st = stmts[k]
    head = st.words[0].text
    if head in _LOOPS:
        j, what = _close(sh, stmts, k, lambda t: t in _LOOPS, "done"), f"`{head}` loop"
    elif head == "case":
        j, what = _close(sh, stmts, k, lambda t: t == "case", "esac"), "`case` statement"
    else:
        j, what = _brace_end(sh, stmts, k), "function" if head != "{" else "`{ ... }` block"
    if _might_matter(stmts[k + 1:j] + ([st] if head in _LOOPS else [])):
        raise sh.fail(st.line, f"a {what} that sets variables or runs the trainer is not "
                      "evaluated; write its result out as plain assignments")
    return j + 1, None


def _close(sh: _Shell, stmts: list[_Stmt], k: int, opens: Callable[[str], bool],
           close: str) -> int:
    """Index of the statement whose head closes the block opened at stmts[k]."""
    depth = 0
    for j in range(k, len(stmts)):
        head = stmts[j].words[0].text
        if opens(head):
            depth += 1
        elif head == close:
            depth -= 1
            if depth == 0:
                return j
    raise sh.fail(stmts[k].line, f"`{stmts[k].words[0].text}` is never closed by `{close}`: "
                  "is the script truncated?")


def _brace_end(sh: _Shell, stmts: list[_Stmt], k: int) -> int:
    """Index of the statement holding the `}` that closes the first `{` from stmts[k]."""
    depth = 0
    for j in range(k, len(stmts)):
        for t in stmts[j].words:
            if t.text == "{":
                depth += 1
            elif t.text == "}":
                depth -= 1
                if depth == 0:
                    return j
    raise sh.fail(stmts[k].line, "a `{` block is never closed by `}`: is the script truncated?")


def _run_if(sh: _Shell, stmts: list[_Stmt], k: int) -> tuple[int, LaunchScript | None]:
    """Evaluate `if cond; then ...; elif cond; then ...; else ...; fi` at stmts[k]."""
    # Find the branches: (condition statement or None for else, first body stmt, end).
    depth = 0
    branches: list[tuple[_Stmt | None, int]] = []
    fi = None
    for j in range(k, len(stmts)):
        h = stmts[j].words[0].text
        if h == "if":
            depth += 1
            if depth == 1:
                branches.append((stmts[j], j + 1))
        elif h == "fi":
            depth -= 1
            if depth == 0:
                fi = j
                break
        elif depth == 1 and h == "elif":
            branches.append((stmts[j], j + 1))
        elif depth == 1 and h == "else":
            branches.append((None, j + 1))
    if fi is None:
        raise sh.fail(stmts[k].line, "`if` is never closed by `fi`: is the script truncated?")
    spans = []
    for n, (cond, start) in enumerate(branches):
        stop = branches[n + 1][1] - 1 if n + 1 < len(branches) else fi
        if cond is not None and start < len(stmts) and stmts[start].words[0].text == "then":
            start += 1
        spans.append((cond, start, stop))
    body = [s for _, a, b in spans for s in stmts[a:b]]
    if not _might_matter(body):
        return fi + 1, None
    for cond, start, stop in spans:
        if cond is not None and not sh.test(_condition(sh, cond.words[1:], cond.line),
                                            cond.line):
            continue
        return fi + 1, _run(sh, stmts, start, stop)
    return fi + 1, None


def _simple(sh: _Shell, st: _Stmt) -> LaunchScript | str | None:
    """Run one simple command: assignments, declarations, or the trainer command."""
    words = st.words
    n = 0
    while n < len(words) and (words[n].kind == "array" or _ASSIGN.match(words[n].text)):
        n += 1
    if n == len(words):  # only assignments: they set shell variables
        for tok in words:
            sh.assign(tok)
        return None
    head = words[n].text
    if head in _DECLARE:
        for tok in words[n + 1:]:
            if tok.kind == "array" or _ASSIGN.match(tok.text):
                sh.assign(tok)
        return None
    if head == "unset":
        for tok in words[n + 1:]:
            sh.env.pop(tok.text, None)
        return None
    if head == "exit":
        return "exit"
    if head in ("source", "."):
        sh.notes.append(f"{sh.path}:{st.line}: `{' '.join(t.text for t in words[n:])}` was "
                        "not read: variables it sets are unknown to rlsim")
        return None
    argv: list[str] = []
    argv_tok: list[tuple[str, tuple[str, ...], int]] = []
    try:
        for tok in words[n:]:
            for text, why in sh.fields(tok):  # also applies ${X:=default}, e.g. under `:`
                argv.append(text)
                argv_tok.append((text, why, tok.line))
    except ScenarioError:
        if head != ":" and not _might_matter([st]):
            return None  # an expansion rlsim does not do, in a command that does not matter
        raise
    entry = _entry(argv)
    if entry is None:
        return None  # another command (echo, mkdir, ray start, ...): no effect on the job
    module, first = entry
    return _command(sh, st, module, argv_tok[first:])


def _command(sh: _Shell, st: _Stmt, module: str,
             args: list[tuple[str, tuple[str, ...], int]]) -> LaunchScript:
    overrides: dict[str, Override] = {}
    config_name: str | None = None
    k = 0
    while k < len(args):
        word, unres, line = args[k]
        flag = word.split("=", 1)[0]
        if flag in _HYDRA_FLAGS:
            if "=" in word:
                value = word.split("=", 1)[1]
            else:
                k += 1
                if k >= len(args):
                    raise sh.fail(line, f"{flag} has no value")
                value = args[k][0]
            if flag in ("--config-name", "-cn"):
                config_name = value.removesuffix(".yaml")
            k += 1
            continue
        if word.startswith("-") or "=" not in word:
            raise sh.fail(line, f"{word!r} is not a Hydra override (key=value) of {module}")
        key, _, text = word.partition("=")
        added = key.startswith("+")
        key = key.lstrip("+")
        if key.startswith("~"):
            raise sh.fail(line, f"{word!r}: deleting a key (~) is not imported; remove it")
        if not re.fullmatch(r"[A-Za-z_][\w.\-@/]*", key):
            raise sh.fail(line, f"{word!r}: {key!r} is not a config key")
        overrides.pop(key, None)  # the last of repeated overrides wins, as in Hydra
        overrides[key] = Override(key, hydra_value(text), text, line, added, unres)
        k += 1
    return LaunchScript(sh.path, module, st.line, config_name, overrides, tuple(sh.notes))
