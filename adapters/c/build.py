"""Build elmo-c, the C implementation of spec/elmo.md (§15's wire protocol), with the system compiler.

    python -m elmo_conformance.adapters.c.build [--sanitize]   # prints the executable's path

`build()` compiles every .c file of this folder with `cc` (or $CC) as C11 with warnings as errors,
into a cache folder under build/ keyed by a hash of the sources, the compiler and the flags, so
that it rebuilds only when one of them changed. With `sanitize=True` it builds with
AddressSanitizer and UndefinedBehaviorSanitizer instead of optimizing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = "elmo-c"
WARNINGS = ["-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wvla", "-Wstrict-prototypes", "-Werror"]
# -ffp-contract=off: no fused multiply-adds, so that each product and sum is rounded as written
# (float32 arithmetic is emulated by rounding every result, real.h); kernels.c allows them around
# its kernels only (both dtypes, as NumPy's BLAS computes), within §10's tolerances. -fno-trapping-math: no program
# here reads the floating-point exception flags, so a comparison may be computed for every vector
# lane (as in the kernels' exp); no value changes.
COMMON = ["-std=c11", "-ffp-contract=off", "-fno-trapping-math", *WARNINGS]
# -O3 rather than -O2: GCC's -O2 vectorizes only loops whose trip count it knows, so the axpy loops
# of linalg.c stay scalar; -O3 vectorizes them (about 1.7x faster at the benchmark size). Neither
# changes a result: without -ffast-math no sum is reassociated.
OPTIMIZED = ["-O3"]
SANITIZED = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def sources() -> list[Path]:
    return sorted(HERE.glob("*.c"))


def compiler() -> list[str]:
    """The compiler command: $CC (which may hold arguments) or `cc`; RuntimeError when none is found."""
    command = shlex.split(os.environ.get("CC", "") or "cc")
    if not command or shutil.which(command[0]) is None:
        raise RuntimeError(f"no C compiler found: {command[0] if command else '$CC'!r} is not on PATH (set $CC)")
    return command


def flags(sanitize: bool) -> list[str]:
    return [*COMMON, *(SANITIZED if sanitize else OPTIMIZED)]


def _compiler_identity(cc: list[str]) -> str:
    try:
        result = subprocess.run([*cc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"the C compiler {cc[0]!r} does not run: {exc}") from exc
    return result.stdout + result.stderr


def _key(cc: list[str], compile_flags: list[str]) -> str:
    digest = hashlib.sha256()
    for part in (*cc, _compiler_identity(cc), *compile_flags):
        digest.update(part.encode() + b"\0")
    for path in sorted([*sources(), *HERE.glob("*.h")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _cache_root() -> Path:
    """build/ beside the sources in a checkout; the user's cache folder in an installed package
    (whose folder may be read-only, and is not the place for build products), or wherever the
    sources are read-only."""
    from elmo_conformance.ground.resources import checkout_root

    local = HERE / "build"
    if checkout_root() is not None and os.access(local if local.is_dir() else HERE, os.W_OK):
        return local
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "elmo-conformance" / "c"


def build(sanitize: bool = False, out_dir: Path | None = None) -> Path:
    """Compile elmo-c (unless the cached build is current) and return the executable's path.

    `out_dir` is where the executable goes; by default a folder under adapters/c/build/ (or, when
    that is read-only, under ~/.cache/elmo-conformance/c/) named after the hash of the sources, the
    compiler and the flags. Raises RuntimeError with the compiler's
    output when the build fails or no compiler is found.
    """
    cc = compiler()
    compile_flags = flags(sanitize)
    key = _key(cc, compile_flags)
    folder = Path(out_dir) if out_dir is not None else _cache_root() / f"{'asan-' if sanitize else ''}{key}"
    executable = folder / PROGRAM
    stamp = folder / f"{PROGRAM}.key"
    if executable.is_file() and stamp.is_file() and stamp.read_text().strip() == key:
        return executable
    folder.mkdir(parents=True, exist_ok=True)
    # Link into a temporary name and rename, so that a concurrent build never sees half a file.
    fd, temporary = tempfile.mkstemp(prefix=f".{PROGRAM}-", dir=folder)
    os.close(fd)
    command = [*cc, *compile_flags, "-o", temporary, *(str(path) for path in sources()), "-lm"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        Path(temporary).unlink(missing_ok=True)
        raise RuntimeError(f"building {PROGRAM} failed: {exc}\ncommand: {shlex.join(command)}") from exc
    if result.returncode != 0:
        Path(temporary).unlink(missing_ok=True)
        output = (result.stdout + result.stderr).strip()
        raise RuntimeError(f"building {PROGRAM} failed (exit {result.returncode}):\n{shlex.join(command)}\n{output}")
    os.chmod(temporary, 0o755)
    os.replace(temporary, executable)
    stamp.write_text(key + "\n")
    return executable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sanitize", action="store_true", help="build with AddressSanitizer and UBSan")
    parser.add_argument("--out-dir", type=Path, default=None, help="where to put the executable")
    args = parser.parse_args(argv)
    try:
        print(build(sanitize=args.sanitize, out_dir=args.out_dir))
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
