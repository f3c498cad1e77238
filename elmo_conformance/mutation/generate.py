"""Generated mutants (spec §13.2): universalmutator's rules applied to the implementation's own
source, one changed line per mutant.

universalmutator (https://github.com/agroce/universalmutator) is a maintained, regexp-based
engine with rule sets for C, C++, Python, JavaScript, Rust, Java, Go and more; one engine serves
every language the suite can check (docs/mutation.md, "Getting started", has the measured comparison with
mutmut and cosmic-ray). Its rules are used as they are; what is added here:

- only lines with code are mutated (a Python line that is all comment or string, a C line in a
  comment, is skipped: changing it changes no program);
- a Python mutant that does not compile is dropped, and so is one whose bytecode equals the
  original's or an earlier mutant's (redundant: the same program, as universalmutator's own Python
  handler decides); a mutant of another language is kept and the build decides (CompileError);
- for Rust, the rules and the kinds of mutant (rust_kind) that measurably make only mutants that
  do not compile or that compile to the clean program or another mutant's (SET_ASIDE,
  SET_ASIDE_KINDS; measured by bench/rust_rules.py, docs/mutation.md, "Rules set aside for Rust")
  are set aside: not generated, counted by rule or kind for the run's report;
- each mutant gets a stable id from its file, line and new text, so that a re-run finds it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import marshal
import os
import re
import tokenize
import warnings
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# File extension -> universalmutator's language (its own table, genmutants.py).
LANGUAGES = {
    ".py": "python",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".js": "javascript",
    ".swift": "swift",
    ".f90": "fortran",
    ".r": "r",
}
_IMPORT = re.compile(r"\s*(import\s|from\s+\S+\s+import\s)")
# A Rust line that declares rather than computes (rust_declaration).
_RUST_DECLARATIONS = (
    ("a `use` declaration", re.compile(r"\s*(pub(\([^)]*\))?\s+)?use\s")),
    ("a `mod` declaration", re.compile(r"\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*;")),
    ("an attribute", re.compile(r"\s*#!?\[")),
)
C_LIKE = ("c", "cpp", "java", "javascript", "rust", "go", "swift")


class EngineMissing(RuntimeError):
    """A package of the `mutate` extra is not installed."""


# The `mutate` extra (pyproject.toml): the engine, per-test coverage (collector.py), the progress bar.
EXTRA = ("universalmutator", "coverage", "tqdm")


def require_extra() -> None:
    """Raise EngineMissing naming every package of the `mutate` extra that is not installed, before
    a run starts rather than in its middle (the engine, or a worker's coverage)."""
    missing = [name for name in EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise EngineMissing(
            f"elmo-conformance mutate needs {', '.join(missing)}, not installed: pip install 'elmo-conformance[mutate]'"
        )


@dataclass(frozen=True)
class Generated:
    """One generated mutant: `line` (1-based) of `file` becomes `replacement`."""

    id: str
    file: str  # absolute path of the original source
    line: int
    original: str  # the original line, without its line ending
    replacement: str  # the mutated line, without its line ending
    rule: str  # the universalmutator rule, "lhs ==> rhs"
    language: str

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        ending = lines[self.line - 1][len(lines[self.line - 1].rstrip("\r\n")) :]
        lines[self.line - 1] = self.replacement + ending
        return "".join(lines)

    @property
    def columns(self) -> tuple[int, int]:
        """1-based first and one-past-last columns of the original line that changed; for an
        insertion (a statement added after the line, nothing of it removed) an empty range at the
        point of insertion, the line's end: no character of the original is marked as changed."""
        start, end_a, _ = self._span()
        return start + 1, end_a + 1

    def _span(self) -> tuple[int, int, int]:
        """0-based start and ends (in the original, in the replacement) of the changed text,
        widened to whole words, so that `annotations -> pass` is not shown as `annotation -> pas`,
        and an insertion inside a line to the operator it extends (`< -> <=`)."""
        a, b = self.original, self.replacement
        start = 0
        while start < min(len(a), len(b)) and a[start] == b[start]:
            start += 1
        end_a, end_b = len(a), len(b)
        while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
            end_a -= 1
            end_b -= 1
        word = re.compile(r"\w")
        while start > 0 and (
            word.match(a[start - 1])
            and (word.match(a[start : start + 1] or " ") or word.match(b[start : start + 1] or " "))
        ):
            start -= 1
        while (
            end_a < len(a)
            and end_b < len(b)
            and word.match(a[end_a])
            and (word.match(a[end_a - 1 : end_a] or " ") or word.match(b[end_b - 1 : end_b] or " "))
        ):
            end_a += 1
            end_b += 1
        if start == end_a and start < len(a.rstrip("\n")):
            # An operator made longer inside the line (`<` to `<=`): the operator it extends.
            symbol = re.compile(r"[^\w\s]")
            while start > 0 and symbol.match(a[start - 1]) and symbol.match(b[start - 1]):
                start -= 1
        return start, end_a, end_b

    @property
    def changed(self) -> tuple[str, str]:
        """The changed text: (original fragment, replacement fragment)."""
        start, end_a, end_b = self._span()
        return self.original[start:end_a], self.replacement[start:end_b]

    def label(self, root: Path | None = None) -> str:
        """`file:line:column  original -> replacement` (the changed fragments)."""
        before, after = self.changed
        path = self.file
        if root is not None:
            with contextlib.suppress(ValueError):
                path = Path(self.file).relative_to(root).as_posix()
        column = self.columns[0]
        before, after = " ".join(before.split()), " ".join(after.split())  # one line, whatever was inserted
        return f"{path}:{self.line}:{column}  {before or '(nothing)'} -> {after or '(nothing)'}"


def language_of(path: Path) -> str | None:
    return LANGUAGES.get(path.suffix.lower())


# Rules (universalmutator's "lhs ==> rhs") that make, in the language, no mutant worth running:
# every one measured did not compile, or compiled to the clean program or to another mutant's.
SET_ASIDE: dict[str, dict[str, str]] = {
    "rust": {},
}
# Kinds of mutant (rust_kind: the kind of line, or where a rule applies) set aside in the
# language, for the same reason.
OUTSIDE_LOOPS = "`break;` or `continue;` after a line outside every loop"
MATCH_ARROW = "the `>` of a match arm's `=>`"
MACRO_BANG = "the `!` of a macro call dropped"
BORROW_BAR = "a borrow's `&` as `|`"
USE = "a `use` declaration"
SET_ASIDE_KINDS: dict[str, frozenset[str]] = {
    "rust": frozenset({OUTSIDE_LOOPS, MATCH_ARROW, MACRO_BANG, BORROW_BAR, USE}),
}
# A word before `&` after which it can only be a borrow (`for &x in &xs`, `return &y`).
_PREFIX_WORDS = {"for", "in", "return", "let", "match", "if", "while", "else", "mut", "move", "ref", "break"}
_LOOP_JUMPS = (r"(^\s*)(\S+.*)\n ==> \1\2\n\1break;\n", r"(^\s*)(\S+.*)\n ==> \1\2\n\1continue;\n")
_LOOP_HEAD = re.compile(r"^\s*(?:'\w+\s*:\s*)?(?:for|while|loop)\b")
_CLOSURE_HEAD = re.compile(r"(?:\|[^|]*\||\|\|)\s*(?:->\s*[^{]*)?$|\b(?:async|move)\s*$")
_FN_HEAD = re.compile(r"\bfn\b")


def _blank_rust(text: str) -> str:
    """`text` with its comments, strings and character literals blanked (newlines kept)."""
    out = re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)
    out = re.sub(r'b?r(#*)".*?"\1', lambda m: re.sub(r"[^\n]", " ", m.group()), out, flags=re.S)
    out = re.sub(r'b?"(?:\\.|[^"\\])*"', lambda m: re.sub(r"[^\n]", " ", m.group()), out, flags=re.S)
    return re.sub(r"'(?:\\.|[^'\\\n])'", "' '", out)


@lru_cache(maxsize=64)
def rust_outside_loops(text: str) -> frozenset[int]:
    """The lines of a Rust source at whose end no loop (`for`, `while`, `loop`) encloses the point,
    or only one outside the function or closure that does: a `break;` or `continue;` inserted
    after such a line does not compile (E0268)."""
    source = _blank_rust(text)
    stack: list[str] = []  # the kind of each open block: "loop", "fn" (a function or closure), "block"
    outside: set[int] = set()
    head_start = 0
    line = 1
    for i, ch in enumerate(source):
        if ch == "{":
            head = source[head_start:i]
            if _LOOP_HEAD.search(head):
                stack.append("loop")
            elif _FN_HEAD.search(head) or _CLOSURE_HEAD.search(head.rstrip()):
                stack.append("fn")
            else:
                stack.append("block")
            head_start = i + 1
        elif ch == "}":
            if stack:
                stack.pop()
            head_start = i + 1
        elif ch == ";":
            head_start = i + 1
        elif ch == "\n":
            if not any(kind == "loop" for kind in stack[len(stack) - _innermost_fn(stack) :]):
                outside.add(line)
            line += 1
    if not any(kind == "loop" for kind in stack[len(stack) - _innermost_fn(stack) :]):
        outside.add(line)
    return frozenset(outside)


def _innermost_fn(stack: list[str]) -> int:
    """How many of the innermost blocks lie inside the innermost function or closure."""
    for depth, kind in enumerate(reversed(stack)):
        if kind == "fn":
            return depth
    return len(stack)


def rust_kind(mutant: Generated, text: str) -> str | None:
    """What kind of Rust mutant this is, where that decides whether it can compile: a mutant of a
    declaration's line (rust_declaration), a `break;` or `continue;` after a line outside every
    loop, a change of the `>` of a match arm's `=>`; or None. `text`: the file's source."""
    kind = rust_declaration(mutant.original)
    if kind is not None:
        return kind
    if mutant.rule in _LOOP_JUMPS and mutant.line in rust_outside_loops(text):
        return OUTSIDE_LOOPS
    before, after = mutant.original, mutant.replacement
    at = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), None)
    if at is None:
        return None
    if mutant.rule.startswith("([^-])> ==>") and before[at] == ">" and at > 0 and before[at - 1] == "=":
        return MATCH_ARROW
    if mutant.rule == "! ==>" and before[at] == "!" and re.match(r"\w", before[at - 1 : at] or " "):
        if re.match(r"!\s*[(\[{]", before[at:]):
            return MACRO_BANG  # `format!(` as `format(`: a macro is not a function
    if mutant.rule.startswith("([^&])&([^&]) ==>") and before[at] == "&" and after[at] == "|":
        left = before[:at].rstrip()
        word = re.search(r"(\w+)$", left)
        if not left or left[-1] in "([{,;=:<!|&*+-/%>" or (word is not None and word.group(1) in _PREFIX_WORDS):
            return BORROW_BAR  # `&x` as `|x`: a closure's bar where an operand belongs
    return None


def aside_key(mutant: Generated, text: str) -> str:
    """How a set-aside mutant is counted: its kind when that kind is set aside, else its rule."""
    kind = rust_kind(mutant, text) if mutant.language == "rust" else None
    if kind is not None and kind in SET_ASIDE_KINDS.get(mutant.language, ()):
        return kind
    return f"rule {mutant.rule}"


def describe_aside(aside: Counter[str]) -> str:
    """One line for a run's report: how many mutants were set aside, and by what."""
    parts = ", ".join(f"{key} {n}" for key, n in sorted(aside.items(), key=lambda kv: (-kv[1], kv[0])))
    return (
        f"{sum(aside.values())} mutants set aside, not run (rules and kinds of mutant that make none worth "
        f"running in their language; docs/mutation.md, Rules set aside for Rust): {parts}"
    )


def _set_aside(mutant: Generated, text: str) -> bool:
    if mutant.rule in SET_ASIDE.get(mutant.language, {}):
        return True
    kinds = SET_ASIDE_KINDS.get(mutant.language, frozenset())
    return bool(kinds) and mutant.language == "rust" and rust_kind(mutant, text) in kinds


def rust_declaration(line: str) -> str | None:
    """What kind of Rust declaration `line` is (a `use` or `mod` declaration, an attribute), or None."""
    return next((kind for kind, pattern in _RUST_DECLARATIONS if pattern.match(line)), None)


def _rules(language: str) -> list[str]:
    require_extra()
    import universalmutator

    static = Path(universalmutator.__file__).resolve().parent / "static"
    names = ["universal.rules", f"{language}.rules"] + (["c_like.rules"] if language in C_LIKE else [])
    return [str(static / name) for name in names if (static / name).exists()]


def _code_lines_python(source: str) -> set[int]:
    """Lines holding a Python token that is not a comment or a string (a docstring line is not code)."""
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.STRING, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    skip |= {
        getattr(tokenize, name)
        for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
        if hasattr(tokenize, name)
    }
    with contextlib.suppress(tokenize.TokenError, IndentationError, SyntaxError):
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in skip and token.type != tokenize.ENDMARKER:
                lines.update(range(token.start[0], token.end[0] + 1))
    return lines


def _code_lines_c(source: str) -> set[int]:
    """Lines with code outside /* */ and // comments (strings are not looked into)."""
    stripped = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), source, flags=re.S)
    stripped = re.sub(r"//[^\n]*", "", stripped)
    return {i for i, line in enumerate(stripped.splitlines(), 1) if line.strip() and not line.lstrip().startswith("#")}


def _stripped_code(code):  # noqa: ANN001, ANN202 (the program without its line numbers)
    consts = tuple(_stripped_code(c) if hasattr(c, "co_code") else c for c in code.co_consts)
    return code.replace(co_consts=consts, co_firstlineno=1, co_linetable=b"", co_exceptiontable=b"", co_filename="")


def _bytecode(source: str, name: str) -> bytes | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a mutant's SyntaxWarning ("'float' object is not callable")
            return marshal.dumps(_stripped_code(compile(source, name, "exec", dont_inherit=True)))
    except (SyntaxError, ValueError):
        return None


def _mutant_id(relative: str, original: str, replacement: str, occurrence: int) -> str:
    """From the file, the line's text before and after and which occurrence of that pair in the
    file it is: not from the line number, so that editing other lines keeps the id."""
    text = f"{relative}\0{original.strip()}\0{replacement.strip()}\0{occurrence}"
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def generate(
    path: Path, relative: str | None = None, check: bool = True, aside: Counter[str] | None = None
) -> list[Generated]:
    """universalmutator's mutants of one file, in line order; [] for a language it does not know.
    `check`: drop Python mutants that do not compile or are redundant, and the mutants of the rules
    and lines set aside for the language (see the module docstring), each counted in `aside`
    (by aside_key) when it is given; without `check`, every mutant of the engine's rules."""
    language = language_of(path)
    if language is None:
        return []
    rules = _rules(language)  # refuses first when the engine is missing
    from universalmutator import mutator

    source = path.read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    code = _code_lines_python(source) if language == "python" else _code_lines_c(source)
    with contextlib.redirect_stdout(io.StringIO()):
        raw = mutator.mutants_regexp(lines, rules, ignorePatterns=[], ignoreStringOnly=True)
    relative = relative or path.name
    original = _bytecode(source, str(path)) if language == "python" and check else None
    seen: set[bytes] = set()
    out: list[Generated] = []
    ids: set[str] = set()
    occurrences: dict[tuple[str, str], int] = {}
    for line, text, rule, _ in raw:
        if line not in code or (language == "python" and _IMPORT.match(lines[line - 1])):
            continue  # not code, or an import: its mutant is a NameError, not a bug
        replacement = text.rstrip("\r\n")
        pair = (lines[line - 1].strip(), replacement.strip())
        occurrence = occurrences[pair] = occurrences.get(pair, -1) + 1
        mutant = Generated(
            _mutant_id(relative, *pair, occurrence),
            os.path.abspath(path),  # as the user names it: a link stays the link inside the project
            line,
            lines[line - 1].rstrip("\r\n"),
            replacement,
            (rule[0] if isinstance(rule, tuple) else str(rule)).strip(),
            language,
        )
        if mutant.id in ids or mutant.replacement == mutant.original:
            continue
        if check and _set_aside(mutant, source):
            if aside is not None:
                aside[aside_key(mutant, source)] += 1
            ids.add(mutant.id)
            continue
        if original is not None:
            compiled = _bytecode(mutant.apply(source), str(path))
            if compiled is None or compiled == original or compiled in seen:
                continue
            seen.add(compiled)
        ids.add(mutant.id)
        out.append(mutant)
    return out


def source_files(paths: list[Path]) -> list[Path]:
    """The files to mutate: each file given, and every file of a language universalmutator knows
    under each folder given (hidden folders, build/ and __pycache__ aside), sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("build", "__pycache__"))
                found += [Path(root) / f for f in sorted(files) if language_of(Path(f))]
        else:
            found.append(path)
    return list(dict.fromkeys(Path(os.path.abspath(p)) for p in found))
