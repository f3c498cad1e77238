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
from dataclasses import dataclass
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


def generate(path: Path, relative: str | None = None, check: bool = True) -> list[Generated]:
    """universalmutator's mutants of one file, in line order; [] for a language it does not know.
    `check`: drop Python mutants that do not compile or are redundant (see the module docstring)."""
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
