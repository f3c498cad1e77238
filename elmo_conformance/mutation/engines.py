"""What each mutation engine generates on the same file, measured (docs/mutation.md, "Getting started"):

    python -m elmo_conformance.mutation.engines FILE...

For each engine that is installed (universalmutator, mutmut 3, cosmic-ray): the mutants it
generates on the file, how many compile (Python's `compile()`), how many of those are distinct
programs (bytecode that differs from the original's and from every other mutant's: the rest are
redundant, the same program twice or the original itself) and the kinds (rules or operators) most
used among the distinct ones. Not used by the runner: it is the measurement behind the choice of
universalmutator (generate.py).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import sys
from collections.abc import Callable
from pathlib import Path

from elmo_conformance.mutation.generate import _bytecode


def universalmutator(path: Path) -> list[tuple[str, str]]:
    """(kind, mutated source) of universalmutator's rules for the file's language, unfiltered."""
    from universalmutator import mutator

    from elmo_conformance.mutation.generate import _rules, language_of

    source = path.read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    raw = mutator.mutants_regexp(lines, _rules(language_of(path) or "none"), ignorePatterns=[], ignoreStringOnly=True)
    out = []
    for line, text, rule, _ in raw:
        mutated = list(lines)
        mutated[line - 1] = text
        out.append((rule[0].strip() if isinstance(rule, tuple) else str(rule), "".join(mutated)))
    return out


def _swap(module, original, mutated):  # noqa: ANN001, ANN202
    import libcst as cst

    class Swap(cst.CSTTransformer):
        def on_leave(self, old, new):  # noqa: ANN001, ANN202
            return mutated if old is original else new

    return module.visit(Swap()).code


def mutmut(path: Path) -> list[tuple[str, str]]:
    """mutmut 3's libcst operators (mutmut.mutation.file_mutation.create_mutations)."""
    import tempfile

    from mutmut.mutation.file_mutation import create_mutations

    path = path.resolve()
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
        Path(folder, "setup.cfg").write_text("[mutmut]\nsource_paths=.\n", encoding="utf-8")  # mutmut wants a config
        module, mutations, _, _ = create_mutations(str(path), path.read_text(encoding="utf-8"))
    out = []
    for mutation in mutations:
        original, mutated = mutation.original_node, mutation.mutated_node
        out.append((f"{type(original).__name__}->{type(mutated).__name__}", _swap(module, original, mutated)))
    return out


def _cosmic_ray_mutants(path: Path, name: str) -> list[tuple[str, str]]:
    from cosmic_ray.ast import Visitor, get_ast_from_path
    from cosmic_ray.plugins import get_operator

    try:
        operator = get_operator(name)()
    except TypeError:  # an operator that needs arguments (VariableReplacer, VariableInserter): not a default
        return []

    class Count(Visitor):
        def __init__(self) -> None:
            self.n = 0

        def visit(self, node):  # noqa: ANN001, ANN201
            self.n += len(list(operator.mutation_positions(node)))
            return node

    counter = Count()
    counter.walk(get_ast_from_path(path))

    class Mutate(Visitor):
        def __init__(self, target: int) -> None:
            self.target, self.seen = target, -1

        def visit(self, node):  # noqa: ANN001, ANN201
            for _ in operator.mutation_positions(node):
                self.seen += 1
                if self.seen == self.target:
                    return operator.mutate(node, 0)
            return node

    return [(name.split("/")[-1], Mutate(i).walk(get_ast_from_path(path)).get_code()) for i in range(counter.n)]


def cosmic_ray(path: Path) -> list[tuple[str, str]]:
    """cosmic-ray's core operators over parso (those that need no arguments: its defaults)."""
    from cosmic_ray.plugins import operator_names

    return [m for name in operator_names() for m in _cosmic_ray_mutants(path, name)]


def universalmutator_as_used(path: Path) -> list[tuple[str, str]]:
    """universalmutator as `mutate` uses it (generate.py): code lines only, no imports, Python
    mutants that compile and are not redundant."""
    from elmo_conformance.mutation.generate import generate

    source = path.read_text(encoding="utf-8")
    return [(m.rule, m.apply(source)) for m in generate(path)]


ENGINES: dict[str, Callable[[Path], list[tuple[str, str]]]] = {
    "universalmutator": universalmutator,
    "  as mutate uses it": universalmutator_as_used,
    "mutmut": mutmut,
    "cosmic-ray": cosmic_ray,
}


def measure(path: Path) -> dict[str, dict]:
    original = _bytecode(path.read_text(encoding="utf-8"), str(path))
    table: dict[str, dict] = {}
    for name, engine in ENGINES.items():
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                mutants = engine(path)
        except ImportError as exc:
            table[name] = {"error": f"not installed ({exc})"}
            continue
        compiled = [(kind, _bytecode(text, str(path))) for kind, text in mutants]
        valid = [(kind, code) for kind, code in compiled if code is not None]
        distinct: dict[bytes, str] = {}
        for kind, code in valid:
            if code != original:
                distinct.setdefault(code, kind)
        kinds = collections.Counter(distinct.values())
        table[name] = {
            "generated": len(mutants),
            "compile": len(valid),
            "distinct": len(distinct),
            "kinds": len(kinds),
            "top": kinds.most_common(6),
            "programs": set(distinct),
        }
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.files:
        table = measure(path)
        print(path)
        for name, row in table.items():
            if "error" in row:
                print(f"  {name:17} {row['error']}")
                continue
            others = set().union(
                *(r.get("programs", set()) for n, r in table.items() if n != name and not n.startswith(" "))
                if not name.startswith(" ")
                else (r.get("programs", set()) for n, r in table.items() if n not in (name, "universalmutator"))
            )
            only = len(row["programs"] - others)
            print(
                f"  {name:17} generated {row['generated']:5}  compile {row['compile']:5}  distinct {row['distinct']:5}"
                f"  only this engine {only:5}  kinds {row['kinds']:3}"
            )
            print("      " + "; ".join(f"{kind} {n}" for kind, n in row["top"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
