"""Trivial compiler equivalence (spec §13.2; docs/mutation.md, "Mutants set aside"): a mutant whose
build makes a program byte for byte the clean one's computes what the clean one computes, and one
whose program is another mutant's is that mutant again. Neither is run: both are Ignored, with the
reason, counted apart, out of the score (Papadakis et al., "Trivial Compiler Equivalence", ICSE
2015: about 7 % of C mutants equivalent and 21 % duplicates).

The bytes compared are the *artifact*: `--artifact PATH` (a file the build makes, relative to the
project root, whose bytes decide the behaviour: a binary, a shared library, a jar), or else the
`cmd:` program itself when it is a compiled binary (ELF, Mach-O, PE, WebAssembly). A program that
is a script is not an artifact: the source it runs is not in its bytes. Only identical bytes set a
mutant aside, so a build that embeds paths or times sets nothing aside; it is never wrong.

The run's registry is a folder of files named by the artifacts' hashes, each created exclusively
(`O_EXCL`) by the first build that made those bytes: the clean build, or one mutant; workers in
other processes see each other's entries at once.
"""

from __future__ import annotations

import os
from pathlib import Path

from elmo_conformance.fixtures.store import sha256_file

CLEAN = "clean"
# The first bytes of compiled programs: ELF, Mach-O (32/64-bit, both orders, universal), PE, wasm.
MAGIC = (
    b"\x7fELF",
    b"\xfe\xed\xfa\xce",
    b"\xfe\xed\xfa\xcf",
    b"\xce\xfa\xed\xfe",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
    b"MZ",
    b"\x00asm",
)


class SameProgram(Exception):
    """The mutant's artifact is one already built: `owner` is CLEAN or the mutant that made it."""

    def __init__(self, owner: str) -> None:
        super().__init__(owner)
        self.owner = owner

    @property
    def reason(self) -> str:
        if self.owner == CLEAN:
            return "equivalent (compiled): its build made the clean program, byte for byte"
        return f"duplicate (compiled) of mutant {self.owner}: its build made that mutant's program, byte for byte"


def compiled(path: Path) -> bool:
    """Whether `path` is a compiled program (its first bytes are a known executable format)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError:
        return False
    return any(head.startswith(magic) for magic in MAGIC)


def claim(registry: Path, artifact: Path, owner: str) -> None:
    """Record that `owner` built `artifact`'s bytes; raise SameProgram when someone already did."""
    registry.mkdir(parents=True, exist_ok=True)
    entry = registry / sha256_file(artifact)
    try:
        handle = os.open(entry, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # the first owner writes its name just after creating the entry
            text = entry.read_text(encoding="utf-8").strip()
            if text:
                raise SameProgram(text) from None
            os.sched_yield()
        raise SameProgram("another mutant") from None
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(owner)


__all__ = ["CLEAN", "SameProgram", "claim", "compiled"]
