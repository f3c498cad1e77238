"""Python mutants that change only annotations no code evaluates or reads (spec §13.2): set aside
as Ignored, "equivalent (annotation only)", counted and listed, never run.

universalmutator edits a line's text wherever its rules match, annotations included
(``dict[str, np.ndarray]`` to ``dict[np.ndarray]``). Such a mutant computes what the original
computes when the annotation is never evaluated or never read:

- a parameter's or a function's return annotation, in a module with ``from __future__ import
  annotations`` (PEP 563: kept as a string in the function's ``__annotations__``, never evaluated);
- a variable's annotation inside a function body (PEP 526: never evaluated, never stored).

and no code of the project reads annotations at run time. A module-level or class-level variable
annotation is never set aside (``dataclasses`` and others read them), nor is any annotation of a
project whose Python sources name a reader of annotations (``INTROSPECTION``: ``get_type_hints``,
``__annotations__``, ``inspect.signature``, ``singledispatch``, pydantic, ...): there every
annotation mutant runs as any other. Line numbers, comments and the layout are not compared.

The same holds for a module's ``__all__``: it decides only what ``from module import *`` takes, so a
mutant that changes only its value is set aside too ("equivalent (__all__ only)") when no Python
file of the project star-imports or reads ``__all__`` (``EXPORTS_READERS``).

Why it matters: a header line reaches every test that calls its function, so an annotation
mutant of a function the whole suite calls ran the whole suite, and survived (docs/speed.md).
``--rerun ID`` still runs the suite on such a mutant.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from elmo_conformance.mutation.generate import Generated
from elmo_conformance.mutation.scratch import SKIPPED_DIRS

REASON = "equivalent (annotation only): it changes only annotations that no code evaluates or reads"
EXPORTS_REASON = (
    "equivalent (__all__ only): it changes only the names `from ... import *` takes, and nothing of the "
    "project star-imports or reads __all__"
)
# What reads `__all__`: a star import, or the name anywhere but its own assignment.
EXPORTS_READERS = re.compile(r"import\s+\*|__all__(?!\s*(?::[^=\n]*)?[+]?=)")
# What reads annotations at run time: where the project's sources name one, no mutant is set aside.
INTROSPECTION = re.compile(
    r"__annotations__|get_type_hints|get_annotations|singledispatch|\bsignature\b|pydantic|typeguard|beartype"
    r"|validate_call|validate_arguments|typing\.get_args|attrs\b"
)


class _Strip(ast.NodeTransformer):
    """Removes the annotations that are never evaluated nor read: parameters' and returns' (only
    under PEP 563), and variables' inside function bodies (always); or the value of `__all__`."""

    def __init__(self, annotations: bool, postponed: bool, exports: bool) -> None:
        self.annotations = annotations  # strip the inert annotations
        self.postponed = postponed and annotations
        self.exports = exports  # strip the value of a module-level `__all__`
        self.depth = 0  # how many function bodies we are in

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.visit(node.args)
        if self.postponed:
            node.returns = None
        elif node.returns is not None:
            self.visit(node.returns)
        self.depth += 1
        node.body = [self.visit(statement) for statement in node.body]
        self.depth -= 1
        return node

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_arg(self, node: ast.arg) -> ast.AST:
        if self.postponed:
            node.annotation = None
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        names = [target.id for target in node.targets if isinstance(target, ast.Name)]
        if self.exports and not self.depth and names == ["__all__"] and _names_only(node.value):
            node.value = ast.Constant(None)  # a list of strings: evaluating it cannot fail
            return node
        return self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if self.depth and self.annotations:  # a local variable's annotation (PEP 526): never evaluated
            node.annotation = ast.Constant(None)
        return self.generic_visit(node)


def _names_only(value: ast.expr) -> bool:
    """A list or tuple display of string constants (what evaluating cannot make fail)."""
    return isinstance(value, (ast.List, ast.Tuple)) and all(
        isinstance(item, ast.Constant) and isinstance(item.value, str) for item in value.elts
    )


def _postponed(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )


def _shape(source: str, exports: bool = False) -> str | None:
    """The module's syntax tree without its inert annotations (with `exports`: without the value
    of its `__all__` instead), as text; None if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return ast.dump(_Strip(not exports, _postponed(tree), exports).visit(tree))


def _lines(node: ast.AST) -> range:
    return range(getattr(node, "lineno", 0), (getattr(node, "end_lineno", None) or 0) + 1)


def _candidate_lines(tree: ast.Module) -> tuple[set[int], set[int]]:
    """The lines on which an inert annotation (what `_Strip` removes) or a module-level `__all__`
    of strings lies: only a mutant of such a line can be set aside, so no other is parsed."""
    postponed = _postponed(tree)
    annotations: set[int] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if postponed:
                arguments = node.args
                every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                every += [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
                for arg in every:
                    if arg.annotation is not None:
                        annotations.update(_lines(arg.annotation))
                if node.returns is not None:
                    annotations.update(_lines(node.returns))
            in_function = True
        elif isinstance(node, ast.AnnAssign) and in_function:
            annotations.update(_lines(node.annotation))
        for child in ast.iter_child_nodes(node):
            visit(child, in_function)

    visit(tree, False)
    exports = {
        line
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["__all__"]
        and _names_only(node.value)
        for line in _lines(node)
    }
    return annotations, exports


@dataclass
class _Original:
    """A source file as read once: its text, its two stripped shapes, its candidate lines."""

    text: str
    shape: str | None = None
    exported: str | None = None
    annotation_lines: set[int] = field(default_factory=set)
    export_lines: set[int] = field(default_factory=set)

    @classmethod
    def read(cls, file: str) -> _Original:
        try:
            text = Path(file).read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            return cls("")
        annotations, exports = _candidate_lines(tree)
        return cls(text, _shape(text), _shape(text, True), annotations, exports)


class Inert:
    """Decides, mutant by mutant, whether a generated Python mutant changes only inert
    annotations. `sources`: the project's Python files (the scratch copy's or the user's), read
    once for readers of annotations."""

    def __init__(self, sources: Iterable[str | Path]) -> None:
        self.readers: list[str] = []  # files that read annotations
        self.export_readers: list[str] = []  # files that star-import or read __all__
        for path in sources:
            try:
                text = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if INTROSPECTION.search(text):
                self.readers.append(str(path))
            if EXPORTS_READERS.search(text):
                self.export_readers.append(str(path))
        self._originals: dict[str, _Original] = {}

    def reason(self, mutant: Generated) -> str | None:
        """REASON when `mutant` changes only inert annotations, EXPORTS_REASON when it changes
        only the value of an `__all__` nothing reads, else None. Only a mutant of a line holding
        such an annotation or `__all__` is parsed."""
        if mutant.language != "python" or mutant.original.strip() == mutant.replacement.strip():
            return None
        if mutant.file not in self._originals:
            self._originals[mutant.file] = _Original.read(mutant.file)
        original = self._originals[mutant.file]
        annotation = not self.readers and mutant.line in original.annotation_lines
        exports = not self.export_readers and mutant.line in original.export_lines
        if not (annotation or exports):
            return None
        mutated = mutant.apply(original.text)
        if annotation and _shape(mutated) == original.shape:
            return REASON
        if exports and _shape(mutated, True) == original.exported:
            return EXPORTS_REASON
        return None


def project_python_files(root: str | Path) -> list[Path]:
    """The project's own Python files under `root`, by the rules a mutant's copy of the project
    follows (scratch.py: no hidden folder, build output or __pycache__), and no site-packages."""
    root = Path(root)
    skipped = SKIPPED_DIRS | {"site-packages"}
    return [
        path
        for path in sorted(root.rglob("*.py"))
        if not any(part.startswith(".") or part in skipped for part in path.relative_to(root).parts[:-1])
    ]
