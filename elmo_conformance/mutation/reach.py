"""Which tests can reach a generated mutant (spec §13.2), from the clean baseline run.

Python: the baseline records, per test, the lines of the mutated files it ran (coverage.py, one
context per test). A mutant's line belongs to its innermost statement; the tests that ran that
statement's first line reach it. A function's header (its decorators, its `def` line with the
argument defaults and annotations) runs on import, but what it changes shows only where the
function is called, or at import when it breaks it: the tests that run the function's body reach
it, and when none does, the cheapest test alone (ONE: a header mutant that breaks the import fails
it). Any other statement outside every function (module or class level) runs on import, before any
test: every test reaches it. No test reaching a statement inside a function means NoCoverage.

Other languages (a program behind the wire protocol): the baseline records which protocol
functions each test calls. The functions of every source of the program (not only the files of
the mutants run: a caller elsewhere must be seen) are found with a scanner of brace languages (a
definition's head per language, DEFINITIONS: C, C++, Rust, Go, JavaScript; brace matching), the
protocol function a handler serves by the line that names it in a string
(`{"scalar_mix", ..., call_scalar_mix}`), and calls by name. A function reached from a protocol
function's handler is reached by the tests that call that protocol function; one that the program
also reaches outside every handler (the wire format, main), one named only in a table, and every
line outside a function are reached by every test. This over-approximates: it can only run more
tests than needed, never fewer.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

EVERY = None  # "every test" (a set of nodeids otherwise)
ONE = frozenset({"<the cheapest test>"})  # one test: a header of a function that no test calls


@lru_cache(maxsize=256)
def _python_statements(file: str, text: str) -> tuple[list[tuple[int, int, bool]], list[tuple[int, int, int, int]]]:
    """(first line, last line, inside a function) of every statement, and (first header line,
    last header line, first body line, last line) of every function outside every function."""
    tree = ast.parse(text)
    found: list[tuple[int, int, bool]] = []
    headers: list[tuple[int, int, int, int]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.stmt):
                found.append((child.lineno, child.end_lineno or child.lineno, inside))
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and not inside and child.body:
                top = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                body = child.body[0].lineno
                headers.append((top, body - 1 if body > child.lineno else child.lineno, body, child.end_lineno or body))
            visit(child, inside)

    visit(tree, False)
    return found, headers


def python_function(file: str, line: int) -> int | None:
    """The first line of the function outside every function that holds `line` of `file`
    (its decorators and header included), or None (module or class level; a file that does not
    parse)."""
    try:
        text = Path(file).read_text(encoding="utf-8")
        _, functions = _python_statements(file, text)
    except (OSError, SyntaxError, ValueError):
        return None
    return next((top for top, _, _, last in functions if top <= line <= last), None)


def python_reach(file: str, line: int, lines: Mapping[str, Mapping[int, Iterable[str]]]) -> set[str] | None:
    """The tests that reach `line` of `file`, or EVERY."""
    text = Path(file).read_text(encoding="utf-8")
    try:
        statements, headers = _python_statements(file, text)
    except SyntaxError:
        return EVERY
    containing = [s for s in statements if s[0] <= line <= s[1]]
    if not containing:
        return EVERY
    first, _, inside = max(containing, key=lambda s: (s[0], -s[1]))
    by_line = lines.get(str(Path(file).resolve())) or lines.get(file) or {}
    if not inside:
        header = next((h for h in headers if h[0] <= line <= h[1]), None)
        if header is None:
            return EVERY
        _, _, body, last = header
        calling = {test for number in range(body, last + 1) for test in by_line.get(number, ())}
        return calling or set(ONE)
    return set(by_line.get(first, ()))


# --- programs -------------------------------------------------------------------------------

_DEFINITION = re.compile(r"^[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", re.M)
# A function definition's head, up to its body's `{`, and its name (group 1), per language. C's
# are at the top level only; the others' may sit in a block (a Rust `impl`, a JavaScript class).
DEFINITIONS = {
    "c": _DEFINITION,
    # C++: qualified names (`int Mix::weights(...) const {`), references and templates in the type.
    "cpp": re.compile(r"^[A-Za-z_][\w\s\*&:<>,]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)[\s\w]*\{", re.M),
    "rust": re.compile(
        r"^[ \t]*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern\s+\"[^\"]*\")\s+)*fn\s+([A-Za-z_]\w*)"
        r"\s*(?:<[^{;]*?>)?\s*\([^{;]*?\)[^{;]*\{",
        re.M,
    ),
    "go": re.compile(r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*\([^{]*?\)[^{\n]*\{", re.M),
    "javascript": re.compile(
        r"^[ \t]*(?:export\s+)?(?:(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\([^)]*\)"
        r"|(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s*)?(?:function\b[^(]*)?\([^)]*\)\s*(?:=>)?"
        r"|(?:static\s+|async\s+)*([A-Za-z_$][\w$]*)\s*\([^)]*\))\s*\{",
        re.M,
    ),
}
_KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "else", "do", "with", "function"}
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_STRING = re.compile(r'"([A-Za-z_]\w*)"')


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def c_functions(text: str, language: str = "c") -> list[tuple[str, int, int, int, int]]:
    """(name, first line, last line, body start offset, body end offset) of each function
    definition of a C-like source (DEFINITIONS: C and C++ at the top level; Rust, Go and
    JavaScript in any block but another function's body)."""
    text = _strip_comments(text)
    found: list[tuple[str, int, int, int, int]] = []
    top_level_only = language in ("c", "cpp")
    for match in DEFINITIONS.get(language, _DEFINITION).finditer(text):
        name = next((g for g in match.groups() if g), None)
        if name is None or name in _KEYWORDS:
            continue
        if top_level_only and text[: match.start()].count("{") != text[: match.start()].count("}"):
            continue  # not at the top level
        if found and match.start() < found[-1][4]:
            continue  # inside the function found before it
        depth, i = 0, match.end() - 1
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        first = text.count("\n", 0, match.start()) + 1
        found.append((name, first, text.count("\n", 0, i) + 1, match.end(), i))
    return found


class ProgramMap:
    """The functions of a program's sources and the protocol functions that reach each."""

    def __init__(self, files: Iterable[Path], protocol_functions: Iterable[str]) -> None:
        self.functions: dict[str, list[tuple[str, int, int]]] = {}  # file -> (name, first, last)
        bodies: dict[str, str] = {}
        roots: dict[str, set[str]] = {}  # protocol function -> handler functions
        names = set(protocol_functions)
        from elmo_conformance.mutation.generate import language_of

        texts = {str(f.resolve()): f.read_text(encoding="utf-8", errors="replace") for f in files}
        for file, text in texts.items():
            stripped = _strip_comments(text)
            spans = c_functions(text, language_of(Path(file)) or "c")
            self.functions[file] = [(name, first, last) for name, first, last, _, _ in spans]
            for name, _, _, start, end in spans:
                bodies[name] = bodies.get(name, "") + stripped[start:end]
            for line in stripped.splitlines():
                for protocol_name in set(_STRING.findall(line)) & names:
                    roots.setdefault(protocol_name, set()).update(_IDENTIFIER.findall(line))
        defined = set(bodies)
        calls = {name: set(_IDENTIFIER.findall(body)) & defined for name, body in bodies.items()}
        handlers = {name for handlers in roots.values() for name in handlers} & defined
        self.reached_by: dict[str, set[str]] = {}
        for protocol_name, handler_names in roots.items():
            for name in self._closure(handler_names & defined, calls, stop=set()):
                self.reached_by.setdefault(name, set()).add(protocol_name)
        # Reached outside the handlers: what main runs for every request (the wire format). A
        # function only named in a table of function pointers is reached by no handler by name:
        # every test reaches it (protocol_functions). One called through a table member of its
        # own name (`ctx->steps->mix_weights(...)`) is found by that name.
        # A function nothing calls by name (main; a mutant's step named only in a table) starts
        # nothing: from main, what the program runs for every request is found.
        self.shared = self._closure({"main"} & defined, calls, stop=handlers)

    @staticmethod
    def _closure(start: set[str], calls: Mapping[str, set[str]], stop: set[str]) -> set[str]:
        seen, todo = set(start), list(start)
        while todo:
            for callee in calls.get(todo.pop(), ()):
                if callee not in seen and callee not in stop:
                    seen.add(callee)
                    todo.append(callee)
        return seen

    def function_at(self, file: str, line: int) -> str | None:
        for name, first, last in self.functions.get(str(Path(file).resolve()), []):
            if first <= line <= last:
                return name
        return None

    def protocol_functions(self, file: str, line: int) -> set[str] | None:
        """The protocol functions whose tests reach `line`, or EVERY."""
        name = self.function_at(file, line)
        if name is None or name in self.shared or name not in self.reached_by:
            return EVERY
        return set(self.reached_by[name])


def program_reach(program: ProgramMap, file: str, line: int, calls: Mapping[str, Iterable[str]]) -> set[str] | None:
    functions = program.protocol_functions(file, line)
    if functions is EVERY:
        return EVERY
    return {nodeid for name in functions for nodeid in calls.get(name, ())}
