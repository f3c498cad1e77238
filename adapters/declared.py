"""What an adapter declares (spec §11, §13.1): its mutants, where each lives, what it replaces."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import CodeType

CodeKey = tuple[str, int, str]  # (file, first line, name): stable across re-imports of a file


@dataclass
class MutantInfo:
    """A declared mutant: its id, its one-line description and where its override lives."""

    id: str
    title: str
    file: str | None
    start_line: int
    end_line: int
    end_column: int
    covers: tuple[tuple[str, int, str], ...] | None  # code keys it replaces; None: unknown
    start_column: int = 1
    replacement: str | None = None  # a generated mutant's new text (Stryker's `replacement`)
    rule: str | None = None  # a generated mutant's universalmutator rule (Stryker's `mutatorName`)
    language: str = "python"


def declared_mutants(adapter: object) -> Mapping[str, Callable[[], object]]:
    """adapter.mutants, or an empty mapping; a malformed declaration is the adapter's error."""
    mutants = getattr(adapter, "mutants", None)
    if mutants is None:
        return {}
    if not isinstance(mutants, Mapping):
        raise TypeError(f"`mutants` must map mutant ids to zero-argument factories (§11), got {type(mutants).__name__}")
    for key, factory in mutants.items():
        if not isinstance(key, str) or not callable(factory):
            raise TypeError(f"`mutants` entry {key!r}: expected a string id and a zero-argument factory (§11)")
    return mutants


def _code(obj: object) -> CodeType | None:
    obj = getattr(obj, "__func__", obj)  # staticmethod, classmethod, bound method
    obj = inspect.unwrap(obj) if callable(obj) else obj
    return getattr(obj, "__code__", None)


def code_key(code: CodeType) -> CodeKey:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def covered_code(factory: object) -> tuple[CodeKey, ...] | None:
    """The code of the clean functions the mutant replaces (`replaces`), or None when it does not
    say or one of them has no Python code: then every test may reach it."""
    replaces = getattr(factory, "replaces", None)
    if not replaces:
        return None
    codes = [_code(obj) for obj in replaces]
    if any(code is None for code in codes):
        return None
    return tuple(code_key(code) for code in codes if code is not None)


def _title(factory: object) -> str:
    """The factory's `description` (one line, §13.1), else the first paragraph of its docstring,
    else its qualified name. A lambda has no docstring of its own: give it a `description`."""
    description = getattr(factory, "description", None)
    if isinstance(description, str) and description.strip():
        return " ".join(description.split())
    doc = inspect.getdoc(factory) if not _is_lambda(factory) else None
    return " ".join((doc or "").split("\n\n")[0].split()) or getattr(factory, "__qualname__", repr(factory))


def _is_lambda(factory: object) -> bool:
    return getattr(factory, "__name__", None) == "<lambda>"


def describe(mutant_id: str, factory: object) -> MutantInfo:
    """The mutant's id, its description (`_title`), and the source lines of its factory (for the
    Stryker report's `location`); file None when the source is not available."""
    target = inspect.unwrap(factory) if callable(factory) else factory
    try:
        file = inspect.getsourcefile(target)  # type: ignore[arg-type]
        lines, start = inspect.getsourcelines(target)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return MutantInfo(mutant_id, _title(factory), None, 1, 1, 1, covered_code(factory))
    start = max(start, 1)
    last = lines[-1].rstrip("\r\n")
    return MutantInfo(
        mutant_id, _title(factory), file, start, start + len(lines) - 1, len(last) + 1, covered_code(factory)
    )
