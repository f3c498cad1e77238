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

Why it matters: a header line reaches every test that calls its function, so an annotation
mutant of a function the whole suite calls ran the whole suite, and survived (docs/speed.md).
``--rerun ID`` still runs the suite on such a mutant.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

from elmo_conformance.mutation.generate import Generated

REASON = "equivalent (annotation only): it changes only annotations that no code evaluates or reads"
# What reads annotations at run time: where the project's sources name one, no mutant is set aside.
INTROSPECTION = re.compile(
    r"__annotations__|get_type_hints|get_annotations|singledispatch|\bsignature\b|pydantic|typeguard|beartype"
    r"|validate_call|validate_arguments|typing\.get_args|attrs\b"
)


class _Strip(ast.NodeTransformer):
    """Removes the annotations that are never evaluated nor read: parameters' and returns' (only
    under PEP 563), and variables' inside function bodies (always)."""

    def __init__(self, postponed: bool) -> None:
        self.postponed = postponed
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

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if self.depth:  # a local variable's annotation (PEP 526): never evaluated
            node.annotation = ast.Constant(None)
        return self.generic_visit(node)


def _postponed(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )


def _shape(source: str) -> str | None:
    """The module's syntax tree without its inert annotations, as text; None if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return ast.dump(_Strip(_postponed(tree)).visit(tree))


class Inert:
    """Decides, mutant by mutant, whether a generated Python mutant changes only inert
    annotations. `sources`: the project's Python files (the scratch copy's or the user's), read
    once for readers of annotations."""

    def __init__(self, sources: Iterable[str | Path]) -> None:
        self.readers: list[str] = []
        for path in sources:
            try:
                text = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if INTROSPECTION.search(text):
                self.readers.append(str(path))
        self._originals: dict[str, tuple[str, str | None]] = {}  # file -> (text, shape)

    def reason(self, mutant: Generated) -> str | None:
        """REASON when `mutant` changes only inert annotations, else None."""
        if mutant.language != "python" or self.readers or mutant.original.strip() == mutant.replacement.strip():
            return None
        if mutant.file not in self._originals:
            try:
                text = Path(mutant.file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            self._originals[mutant.file] = (text, _shape(text) if text else None)
        text, shape = self._originals[mutant.file]
        if shape is None:
            return None
        mutated = _shape(mutant.apply(text))
        return REASON if mutated is not None and mutated == shape else None


SKIPPED_FOLDERS = {"__pycache__", "site-packages", "node_modules", "build", "dist"}


def project_python_files(root: str | Path) -> list[Path]:
    """The project's own Python files under `root`: not in hidden folders (a virtual environment,
    .git), site-packages, node_modules or build outputs."""
    root = Path(root)
    return [
        path
        for path in sorted(root.rglob("*.py"))
        if not any(part.startswith(".") or part in SKIPPED_FOLDERS for part in path.relative_to(root).parts[:-1])
    ]
