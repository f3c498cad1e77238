"""Generated Python mutants that change only inert annotations are set aside, not run (spec §13.2;
elmo_conformance/mutation/inert.py): PEP 563's postponed parameter and return annotations, and
PEP 526's local variable annotations; never a default, a module or class annotation, nor an
annotation of a project that reads annotations at run time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from elmo_conformance.mutation.generate import Generated
from elmo_conformance.mutation.inert import EXPORTS_REASON, REASON, Inert, project_python_files

ROOT = Path(__file__).resolve().parent.parent

POSTPONED = """from __future__ import annotations

import numpy as np

LIMIT: int = 3


class Row:
    size: int = 1


def scale(x: np.ndarray, factor: float = 2.0) -> np.ndarray:
    total: float = 0.0
    return x * factor + total


def shift(
    x: np.ndarray,
    by: float,
) -> np.ndarray:
    return x + by
"""

EAGER = POSTPONED.replace("from __future__ import annotations\n", "")


def mutant(path: Path, line: int, replacement: str) -> Generated:
    original = path.read_text(encoding="utf-8").splitlines()[line - 1]
    return Generated("m", str(path), line, original, replacement, "rule ==> rule", "python")


def line_of(text: str, start: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(start))


@pytest.mark.parametrize(
    ("start", "replacement", "inert"),
    [
        # PEP 563: a parameter's and a return annotation are strings nothing evaluates
        ("def scale", "def scale(x: int, factor: float = 2.0) -> np.ndarray:", True),
        ("def scale", "def scale(x: np.ndarray, factor: float = 2.0) -> str:", True),
        # a default is evaluated and used: never inert
        ("def scale", "def scale(x: np.ndarray, factor: float = 3.0) -> np.ndarray:", False),
        # a parameter's name is part of the call: never inert
        ("def scale", "def scale(y: np.ndarray, factor: float = 2.0) -> np.ndarray:", False),
        # PEP 526: a local variable's annotation is never evaluated; its value is code
        ("    total: float", "    total: int = 0.0", True),
        ("    total: float", "    total: float = 1.0", False),
        # module and class annotations are stored (dataclasses read them): never inert
        ("LIMIT", "LIMIT: str = 3", False),
        ("    size", "    size: str = 1", False),
        # an annotation on its own line of a header written over several lines
        ("    by: float", "    by: int,", True),
        ("    by: float", "    bye: float,", False),
        # the same syntax tree, but no annotation changed: not this module's to say (it runs)
        ("    return x * factor", "    return (x * factor + total)", False),
        # a mutant that does not parse is left to the run (it fails its import)
        ("def scale", "def scale(x: np.ndarray, factor: float = 2.0) -> :", False),
    ],
)
def test_only_inert_annotations_are_set_aside(tmp_path: Path, start: str, replacement: str, inert: bool) -> None:
    source = tmp_path / "mix.py"
    source.write_text(POSTPONED, encoding="utf-8")
    found = Inert([source]).reason(mutant(source, line_of(POSTPONED, start), replacement))
    assert found == (REASON if inert else None), f"{replacement!r}: expected inert={inert}, got {found!r}"


def test_without_postponed_annotations_a_parameter_annotation_is_evaluated_and_runs(tmp_path: Path) -> None:
    source = tmp_path / "mix.py"
    source.write_text(EAGER, encoding="utf-8")
    header = mutant(source, line_of(EAGER, "def scale"), "def scale(x: int, factor: float = 2.0) -> np.ndarray:")
    assert Inert([source]).reason(header) is None
    local = mutant(source, line_of(EAGER, "    total: float"), "    total: int = 0.0")
    assert Inert([source]).reason(local) == REASON, "a local annotation is never evaluated, PEP 563 or not"


@pytest.mark.parametrize(
    "reader", ["typing.get_type_hints(scale)", "inspect.signature(scale)", "scale.__annotations__"]
)
def test_a_project_that_reads_annotations_has_none_set_aside(tmp_path: Path, reader: str) -> None:
    source = tmp_path / "mix.py"
    source.write_text(POSTPONED, encoding="utf-8")
    (tmp_path / "registry.py").write_text(f"import inspect, typing\nfrom mix import scale\nTYPES = {reader}\n")
    inert = Inert(project_python_files(tmp_path))
    assert inert.readers == [str(tmp_path / "registry.py")]
    header = mutant(source, line_of(POSTPONED, "def scale"), "def scale(x: int, factor: float = 2.0) -> np.ndarray:")
    assert inert.reason(header) is None


def test_the_project_files_skip_environments_and_build_outputs(tmp_path: Path) -> None:
    for name in ("mix.py", "pkg/core.py", ".venv/lib/site.py", "build/lib/mix.py", "pkg/__pycache__/x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    found = [path.relative_to(tmp_path).as_posix() for path in project_python_files(tmp_path)]
    assert found == ["mix.py", "pkg/core.py"]


def test_the_references_annotation_mutants_are_set_aside_and_nothing_else() -> None:
    """On universalmutator's own mutants of reference/params.py: each mutant set aside lies on a
    function's header or a local annotation, and its module's code, annotations stripped, is the
    original's; every mutant of a line with no annotation runs."""
    pytest.importorskip("universalmutator")
    from elmo_conformance.mutation.generate import generate

    source = ROOT / "reference" / "params.py"
    generated = generate(source)
    inert = Inert(project_python_files(ROOT / "reference"))
    assert not inert.readers, inert.readers
    aside = [m for m in generated if inert.reason(m) is not None]
    assert aside, "reference/params.py's return annotations have mutants (the survivors of docs/speed.md)"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    headers = {
        n
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        for n in range(node.lineno, node.body[0].lineno)
    }
    locals_annotated = {node.lineno for node in ast.walk(tree) if isinstance(node, ast.AnnAssign)}
    for m in aside:
        assert m.line in headers | locals_annotated, f"{m.line}: {m.original!r} -> {m.replacement!r}"
    plain = [m for m in generated if m.line not in headers | locals_annotated]
    assert plain and all(inert.reason(m) is None for m in plain)


EXPORTS = """from mix_core import scale, shift

__all__ = ["scale", "shift"]
"""


@pytest.mark.parametrize(
    ("replacement", "reason"),
    [
        ('__all__ = ["scale"]', EXPORTS_REASON),  # only what `import *` takes changes
        ('__all__ = ["scale", "shift", "other"]', EXPORTS_REASON),
        ('__all__ = ["scale"] + 1', None),  # raises at import: never set aside
        ("__all__ = scale", None),
        ("__al__ = []", None),  # another name
    ],
)
def test_a_mutant_of_all_is_set_aside_only_while_nothing_star_imports(
    tmp_path: Path, replacement: str, reason: str | None
) -> None:
    source = tmp_path / "mix.py"
    source.write_text(EXPORTS, encoding="utf-8")
    changed = mutant(source, 3, replacement)
    assert Inert([source]).reason(changed) == reason, replacement
    (tmp_path / "user.py").write_text("from mix import *\n")
    assert Inert(project_python_files(tmp_path)).reason(changed) is None, "a star import reads __all__"
