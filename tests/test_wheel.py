"""The suite as an implementer gets it who keeps their ELMo in their own repository: the wheel is
built, installed into a fresh virtual environment outside the checkout, and used from an empty
directory that holds only a third-party adapter file, with a small installed package that
registers an adapter by entry point. The conformance suite, the mutation runner and the fixtures
check run there and their reports are read back; a tampered installed fixture is refused; the
pytest plugin is registered once (installed, and installed beside a checkout) and inert in a
user's own pytest run.

The environment reuses this one's packages (a .pth file), so that nothing is downloaded; what
runs is the wheel's own files: every module of the suite is imported from the new environment,
and none from the checkout. About two minutes; `-m "not wheel"` leaves it out.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

import elmo_conformance
from elmo_conformance.ground.resources import PLUGIN, SUBPACKAGES, spec_version

ROOT = Path(__file__).resolve().parent.parent
FIXTURES_ENV = "ELMO_FIXTURES_DIR"
# One wheel and venv, on one worker; `integration`: CI runs it with `nox -s tests -- -m integration`.
pytestmark = [pytest.mark.wheel, pytest.mark.integration, pytest.mark.xdist_group("wheel")]

THIRD_PARTY = '''
"""A third-party adapter, kept in its implementer's own repository: the reference in float64,
declaring one catalog mutant and one of its own."""

import numpy as np

from elmo_conformance import reference


class ThirdParty:
    name = "thirdparty"
    capabilities = frozenset({"float64", "grad"})

    scalar_mix = staticmethod(reference.scalar_mix)
    scalar_mix_vjp = staticmethod(reference.scalar_mix_vjp)
    bilm_layers = staticmethod(reference.bilm_layers)
    bilm_logits = staticmethod(reference.bilm_logits)
    bilm_loss = staticmethod(reference.bilm_loss)
    bilm_loss_grad = staticmethod(reference.bilm_loss_grad)
    bilm_layers_vjp = staticmethod(reference.bilm_layers_vjp)
    fit_linear_probe = staticmethod(reference.fit_linear_probe)
    probe_accuracy = staticmethod(reference.probe_accuracy)


class RawWeights(ThirdParty):
    """s01: the raw s as weights."""

    def scalar_mix(self, s, gamma, layers):
        reference.scalar_mix(s, gamma, layers)
        dtype = layers[0].dtype
        return gamma.astype(dtype)[0] * np.tensordot(s.astype(dtype), np.stack(layers), axes=1)


class NoGamma(ThirdParty):
    """gamma is never applied."""

    def scalar_mix(self, s, gamma, layers):
        return reference.scalar_mix(s, np.ones_like(gamma), layers)


adapter = ThirdParty()
adapter.mutants = {"s01": RawWeights, "x-no-gamma": NoGamma}
'''

MYLIB = '''
"""mylib: an ELMo whose adapter the package registers by entry point (elmo_conformance.adapters)."""

from elmo_conformance import reference


class MyLibAdapter:
    name = "mylib"
    capabilities = frozenset({"float64"})

    scalar_mix = staticmethod(reference.scalar_mix)
    bilm_layers = staticmethod(reference.bilm_layers)
    bilm_logits = staticmethod(reference.bilm_logits)
    bilm_loss = staticmethod(reference.bilm_loss)
    fit_linear_probe = staticmethod(reference.fit_linear_probe)
    probe_accuracy = staticmethod(reference.probe_accuracy)
'''

MYLIB_PROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "mylib"
version = "0.1.0"

[project.entry-points."elmo_conformance.adapters"]
mylib = "mylib:MyLibAdapter"

[tool.setuptools]
packages = ["mylib"]
"""

PROBE = ROOT / "tests" / "examples" / "elmo_probe.py"  # the plugin that reports registrations and imports


@dataclass
class Installed:
    wheel: Path
    python: Path
    command: Path  # the installed console script, elmo-conformance
    site: Path  # the new environment's site-packages
    work: Path  # the user's directory: thirdparty.py, and the reports the runs write
    probe: Path  # a folder with the probe plugin, for PYTHONPATH
    env: dict[str, str]

    def run(self, *args: str, cwd: Path | None = None, probe: Path | None = None, timeout: float = 600):
        env = dict(self.env)
        if probe is not None:
            env |= {"PYTHONPATH": str(self.probe), "ELMO_PROBE_OUT": str(probe)}
        return subprocess.run(
            [str(a) for a in args], cwd=cwd or self.work, env=env, capture_output=True, text=True, timeout=timeout
        )


def _check(done: subprocess.CompletedProcess, code: int = 0) -> subprocess.CompletedProcess:
    assert done.returncode == code, f"exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def _source(dest: Path) -> Path:
    """The files of a checkout (tracked, and new files git does not ignore), without build leftovers."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout.split(b"\0")
    except (OSError, subprocess.SubprocessError):
        ignore = shutil.ignore_patterns(".git", ".nox", "build", "*.egg-info", "__pycache__", "reports", ".*cache")
        shutil.copytree(ROOT, dest, ignore=ignore)
        return dest
    for name in filter(None, (entry.decode() for entry in listed)):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _pip(python: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check", *args]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", FIXTURES_ENV)}
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    source = _source(tmp / "src")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    build = [*pip, "wheel", "--no-deps", *isolation, "-w", str(tmp / "dist"), str(source)]
    _check(subprocess.run(build, env=env, capture_output=True, text=True, timeout=600))
    [wheel] = (tmp / "dist").glob("elmo_conformance-*.whl")

    venv = tmp / "venv"
    _check(subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True))
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # This environment's packages (numpy, pytest, ...) for the new one, after its own site-packages.
    outer = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "_elmo_test_dependencies.pth").write_text("\n".join(outer) + "\n", encoding="utf-8")
    install = _pip(python, "install", "--no-deps", "--force-reinstall", str(wheel))
    _check(subprocess.run(install, env=env, capture_output=True, text=True, timeout=600))
    deps = "import numpy, pytest, hypothesis, jsonschema, jinja2, matplotlib"
    if subprocess.run([str(python), "-c", deps], env=env, capture_output=True).returncode != 0:
        _check(subprocess.run(_pip(python, "install", str(wheel)), env=env, capture_output=True, text=True))

    mylib = tmp / "mylib-src"
    (mylib / "mylib").mkdir(parents=True)
    (mylib / "pyproject.toml").write_text(MYLIB_PROJECT, encoding="utf-8")
    (mylib / "mylib" / "__init__.py").write_text(MYLIB, encoding="utf-8")
    install = _pip(python, "install", "--no-deps", *isolation, str(mylib))
    _check(subprocess.run(install, env=env, capture_output=True, text=True, timeout=600))

    work = tmp / "work"
    work.mkdir()
    (work / "thirdparty.py").write_text(THIRD_PARTY, encoding="utf-8")
    probe = tmp / "probe"
    probe.mkdir()
    shutil.copy(PROBE, probe / "elmo_probe.py")
    return Installed(wheel, python, venv / "bin" / "elmo-conformance", site, work, probe, env)


def _inside(path: str | None, folder: Path) -> bool:
    return path is not None and Path(path).resolve().is_relative_to(folder.resolve())


def test_the_wheel_carries_every_file_of_the_suite(installed: Installed) -> None:
    """Every file of spec/, fixtures/, reference/, adapters/, conformance/ and elmo_conformance/ is
    in the wheel, under the one import name: code, the spec's prose and JSON, the schemas, the
    fixtures and their manifest, the C sources, the report templates."""
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    expected = []
    source = installed.wheel.parent.parent / "src"
    for top in ("elmo_conformance", *SUBPACKAGES):
        for path in (source / top).rglob("*"):
            parts = path.relative_to(source / top).parts
            if path.is_file() and not {"__pycache__", "build"} & set(parts) and path.name != ".gitignore":
                expected.append("/".join(["elmo_conformance", *([] if top == "elmo_conformance" else [top]), *parts]))
    missing = sorted(set(expected) - names)
    assert not missing, f"not in the wheel: {missing}"
    assert {"elmo_conformance/spec/elmo.md", "elmo_conformance/fixtures/manifest.json"} <= names
    assert not [n for n in names if n.startswith(("tests/", "bench/", "scripts/", "examples/", "docs/"))]
    entry_points = zipfile.ZipFile(installed.wheel).read(
        f"elmo_conformance-{elmo_conformance.__version__}.dist-info/entry_points.txt"
    )
    assert f"{PLUGIN} = {PLUGIN}" in entry_points.decode() and "elmo-conformance = elmo_conformance.cli:main" in (
        entry_points.decode()
    )


def test_the_installed_suite_checks_a_third_party_adapter_from_an_empty_directory(installed: Installed) -> None:
    out = installed.work / "probe.json"
    args = ["--impl", "thirdparty.py", "-q", "--report", "conformance.json", "--pass-table", "pass-table.json"]
    done = _check(installed.run(installed.command, *args, "-p", "elmo_probe", probe=out))
    report = json.loads((installed.work / "conformance.json").read_text())
    assert report["complete"] and report["exit_status"] == 0 and report["summary"].get("failed", 0) == 0
    assert report["collected"] == len(report["tests"]) > 100, done.stdout[-2000:]
    assert report["spec_version"] == spec_version() == report["provenance"]["spec_version"]
    assert report["provenance"]["suite_version"] == elmo_conformance.__version__
    assert report["provenance"]["commit"] is None, "not a checkout"
    assert (installed.work / "conformance.html").is_file()
    table = json.loads((installed.work / "pass-table.json").read_text())
    assert (table["suite_version"], table["spec_version"]) == (elmo_conformance.__version__, spec_version())
    seen = json.loads(out.read_text())
    assert seen["hookimpls"] == 1 and seen["names"] == [PLUGIN], seen
    foreign = {name: path for name, path in seen["modules"].items() if path and not _inside(path, installed.site)}
    assert not foreign, f"imported from outside the installed package: {foreign}"
    assert not _inside(seen["modules"]["elmo_conformance"], ROOT)
    assert not (installed.work / ".pytest_cache").exists()


def test_an_installed_package_registers_an_adapter_by_name(installed: Installed) -> None:
    args = ["--impl", "mylib", "-q", "-k", "test_hand_example", "--report", "mylib.json"]
    _check(installed.run(installed.command, *args))
    report = json.loads((installed.work / "mylib.json").read_text())
    assert [(a["impl"], a["name"]) for a in report["adapters"]] == [("mylib", "mylib")]
    assert report["collected"] == len(report["tests"]) >= 1 and not report["summary"].get("failed")


def test_the_installed_mutation_runner_kills_the_adapters_mutants(installed: Installed) -> None:
    args = ["mutants", "--impl", "thirdparty.py", "--mutant", "s01", "--mutant", "x-no-gamma"]
    done = _check(installed.run(installed.command, *args, "--no-html", "--out", "mutants"))
    report = json.loads((installed.work / "mutants" / "mutation-report.json").read_text())
    assert report["framework"]["version"] == elmo_conformance.__version__
    assert report["config"]["specVersion"] == spec_version()
    statuses = {m["mutatorName"]: m["status"] for f in report["files"].values() for m in f["mutants"]}
    assert statuses == {"s01": "Killed", "x-no-gamma": "Killed"}, done.stdout[-3000:]


def test_the_installed_mutate_generates_a_report_for_a_new_implementation(installed: Installed) -> None:
    """§13.2 from the user's own directory with the wheel installed: an implementation that declares
    no mutant (tests/examples/outside_mix.py) gets mutants generated from its own file, run and
    reported, and its file is left as it was. Two chosen mutants and the tests that judge them keep
    it short: one the suite kills, one in a function nothing calls (NoCoverage)."""
    from elmo_conformance.mutation.generate import generate

    mine = installed.work / "mine_mix.py"
    shutil.copy(ROOT / "tests" / "examples" / "outside_mix.py", mine)
    before = mine.read_bytes()
    ids = {m.label().split("  ", 1)[1]: m.id for m in generate(mine)}
    chosen = ["--mutant", ids["e / total -> None"], "--mutant", ids["e = np.exp(s) -> pass"]]
    args = ["mutate", "--impl", "mine_mix.py", "-k", "hand_example", "--no-html", "--out", "generated", *chosen]
    done = _check(installed.run(installed.command, *args))
    report = json.loads((installed.work / "generated" / "mutation-report.json").read_text(encoding="utf-8"))
    assert report["framework"]["version"] == elmo_conformance.__version__
    [(path, entry)] = report["files"].items()
    assert path == "mine_mix.py" and "def softmax(s):" in entry["source"], "the user's own file, as they named it"
    statuses = {m["description"].split("  ", 1)[1]: m["status"] for m in entry["mutants"]}
    assert statuses == {"e / total -> None": "Killed", "e = np.exp(s) -> pass": "NoCoverage"}, done.stdout[-3000:]
    assert mine.read_bytes() == before, "the user's file changed"


def test_the_installed_fixtures_are_checked_and_never_regenerated(installed: Installed) -> None:
    done = _check(installed.run(installed.command, "fixtures", "--skip", "mutants", "--impl", "mylib"))
    regenerate = [line for line in done.stdout.splitlines() if line.startswith("[5 regenerate]")]
    assert regenerate and all("SKIP  this is an installed package" in line for line in regenerate)
    assert any(
        line.startswith("[6 reference ] (whole suite)") and " PASS " in line for line in done.stdout.splitlines()
    )
    assert ", 0 fail," in done.stdout
    refused = _check(installed.run(installed.command, "fixtures", "--regenerate"), 2)
    assert "--regenerate: this is an installed package" in refused.stderr


def test_a_tampered_installed_fixture_is_refused(installed: Installed) -> None:
    fixture = installed.site / "elmo_conformance" / "fixtures" / "scalar_mix_examples.json"
    original = fixture.read_bytes()
    try:
        fixture.write_bytes(original.replace(b"0.", b"1.", 1))
        suite = _check(installed.run(installed.command, "--impl", "numpy", "-q"), 4)
        assert "fixtures refused, no test was run" in suite.stderr
        assert "scalar_mix_examples.json: sha256" in suite.stderr
        checks = ["fixtures", "--skip", "regenerate", "--skip", "reference", "--skip", "mutants"]
        check = _check(installed.run(installed.command, *checks), 1)
        assert "FIXTURES REFUSED" in check.stdout and "scalar_mix_examples.json" in check.stdout
    finally:
        fixture.write_bytes(original)


def test_the_plugin_beside_a_checkout_is_registered_once(installed: Installed) -> None:
    """The package installed, pytest run in a checkout: the entry point and conformance/conftest.py
    name the same plugin, which is registered once."""
    out = installed.work / "probe-checkout.json"
    args = ["-m", "pytest", "conformance/test_conventions.py", "--impl", "numpy", "-q", "-p", "elmo_probe"]
    _check(installed.run(installed.python, *args, "-p", "no:cacheprovider", cwd=ROOT, probe=out))
    seen = json.loads(out.read_text())
    assert seen["hookimpls"] == 1 and seen["names"] == [PLUGIN], seen


def test_the_installed_plugin_is_inert_in_a_users_own_run(installed: Installed, tmp_path: Path) -> None:
    (tmp_path / "test_users_own.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.fixture
            def case():
                return 3

            def test_uses_a_fixture_named_case(case):
                assert case == 3
            """
        ),
        encoding="utf-8",
    )
    out = tmp_path / "probe.json"
    done = _check(installed.run(installed.python, "-m", "pytest", "-q", "-p", "elmo_probe", cwd=tmp_path, probe=out))
    assert "1 passed" in done.stdout
    assert json.loads(out.read_text())["names"] == [PLUGIN], "the entry point loaded it"


def test_the_plain_pytest_reproduce_command_works_from_the_users_directory(installed: Installed) -> None:
    test = "elmo_conformance.conformance.test_scalar_mix::test_hand_example_scalar_mix[thirdparty-float64]"
    args = ["-m", "pytest", "-p", PLUGIN, "--impl", "thirdparty.py", "--pyargs", test, "-p", "no:cacheprovider"]
    done = _check(installed.run(installed.python, *args))
    assert "1 passed" in done.stdout


def test_an_editable_install_of_the_checkout_registers_the_plugin_once(installed: Installed, tmp_path: Path) -> None:
    """`pip install -e .` (the maintainer's setup): the entry point and conformance/conftest.py both
    name the plugin, in a pytest run in the checkout and in a console-command run elsewhere."""
    venv = tmp_path / "venv"
    _check(subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True))
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shutil.copy(installed.site / "_elmo_test_dependencies.pth", Path(site) / "_elmo_test_dependencies.pth")
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    install = _pip(python, "install", "--no-deps", *isolation, "-e", str(ROOT))
    _check(subprocess.run(install, env=installed.env, capture_output=True, text=True, timeout=600))
    out = tmp_path / "probe.json"
    args = ["-m", "pytest", "conformance/test_conventions.py", "--impl", "numpy", "-q", "-p", "elmo_probe"]
    _check(installed.run(python, *args, "-p", "no:cacheprovider", cwd=ROOT, probe=out))
    assert json.loads(out.read_text())["names"] == [PLUGIN] and json.loads(out.read_text())["hookimpls"] == 1
    args = ["-m", "elmo_conformance", "--impl", "numpy", "-q", "-k", "test_hand_example", "-p", "elmo_probe"]
    _check(installed.run(python, *args, cwd=tmp_path, probe=out))
    seen = json.loads(out.read_text())
    assert seen["names"] == [PLUGIN] and seen["hookimpls"] == 1
    assert _inside(seen["modules"]["elmo_conformance.conformance.plugin"], ROOT), "the checkout's code runs"


# --- mutate from a real install of the `mutate` extra -------------------------------------------


@dataclass
class WithMutate:
    python: Path
    command: Path
    env: dict[str, str]

    def mutate(self, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.command), "mutate", *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=900
        )


@pytest.fixture(scope="module")
def with_mutate(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> WithMutate:
    """The wheel installed with its `mutate` extra into a fresh virtual environment, as a user
    installs it (pip, the project's constraints, nothing borrowed from this environment): the
    extra's dependencies bring the `typing` backport into site-packages beside the suite."""
    venv = tmp_path_factory.mktemp("mutate-extra") / "venv"
    _check(subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True))
    python = venv / "bin" / "python"
    install = _pip(python, "install", "-c", str(ROOT / "constraints.txt"), f"{installed.wheel}[mutate]")
    _check(subprocess.run(install, env=installed.env, capture_output=True, text=True, timeout=900))
    return WithMutate(python, venv / "bin" / "elmo-conformance", installed.env)


def _tree(folder: Path, leave_out: str) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder")
        for p in sorted(folder.rglob("*"))
        if p.relative_to(folder).parts[0] != leave_out
    }


def _judged(report: dict) -> dict[tuple[str, str], dict]:
    return {
        (file, m["description"].split("  ", 1)[1]): m
        for file, entry in report["files"].items()
        for m in entry["mutants"]
    }


def _mutants_left(venv: Path) -> list[str]:
    """Processes of this environment's Python (the harness, its workers, served mutants, built
    programs) still running."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(venv) in command:
            found.append(f"{pid}: {command}")
    return found


def _check_verdicts(done: subprocess.CompletedProcess, report: dict, expected: dict[tuple[str, str], str]) -> None:
    judged = _judged(report)
    assert {key: m["status"] for key, m in judged.items()} == expected, done.stdout[-4000:] + done.stderr[-4000:]
    tests = {t["id"] for entry in report["testFiles"].values() for t in entry["tests"]}
    for m in judged.values():
        if m["status"] == "Killed":
            assert m["killedBy"] and set(m["killedBy"]) <= tests, m
            assert m["testsCompleted"] >= 1, m
        if m["status"] == "Timeout":  # stopped at its test's own deadline by the worker that judged it
            hung = m["statusReason"].removeprefix("its test ").split(" did not finish within ", 1)
            assert len(hung) == 2 and hung[0] in tests, m


def _choose(folder: Path, names: tuple[str, ...], wanted: dict[tuple[str, str], str]) -> list[str]:
    from elmo_conformance.mutation.generate import generate

    found = {
        (name, m.label().split("  ", 1)[1]): m.id for name in names for m in generate(folder / name, relative=name)
    }
    return [arg for key in wanted for arg in ("--mutant", found[key])]


def _mutate_and_check(
    with_mutate: WithMutate, folder: Path, args: list[str], select: str, expected: dict[tuple[str, str], str]
) -> None:
    """Run the installed `mutate` in `folder` on the mutants of `expected` (`args` name the files),
    and check what it observed: each status, each kill's test, exit 0, the user's folder unchanged
    apart from --out, no process of the environment left."""
    before = _tree(folder, "out")
    chosen = _choose(folder, tuple(dict.fromkeys(name for name, _ in expected)), expected)
    done = with_mutate.mutate(*args, "--out", "out", "--no-html", "-k", select, *chosen, cwd=folder)
    report = json.loads((folder / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    _check_verdicts(done, report, expected)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _tree(folder, "out") == before, "a mutant or a build wrote into the user's folder"
    assert not _mutants_left(with_mutate.python.parent.parent)


def test_the_installed_mutate_judges_an_adapter_and_the_module_beside_it(
    with_mutate: WithMutate, tmp_path: Path
) -> None:
    """(a) An outside implementation whose adapter imports a module beside it, both mutated, from
    the wheel with the real `mutate` extra: every kill names a test, the survivor survives, and
    the user's folder is unchanged apart from --out."""
    from tests.test_mutate_trust import ADAPTER, HELPER

    (tmp_path / "helper.py").write_text(HELPER.lstrip(), encoding="utf-8")
    (tmp_path / "adapter.py").write_text(ADAPTER.lstrip(), encoding="utf-8")
    expected = {
        ("helper.py", "max -> min"): "Killed",
        ("adapter.py", "+ -> -"): "Killed",
        ("helper.py", "TOUCH -> not (TOUCH)"): "Survived",
    }
    args = ["--impl", "adapter.py", "--source", "adapter.py", "--source", "helper.py"]
    _mutate_and_check(with_mutate, tmp_path, args, "hand_example or stable_for_large_s", expected)


def test_the_installed_mutate_judges_a_package_whose_mutant_writes_to_its_own_file(
    with_mutate: WithMutate, tmp_path: Path
) -> None:
    """(b) A package of two modules (`--impl mixpkg.adapter:adapter --source mixpkg`), one of
    whose mutants appends to its own `__file__` and writes in its working folder."""
    from tests.test_mutate_trust import ADAPTER, HELPER

    package = tmp_path / "mixpkg"
    package.mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mixpkg"\nversion = "0.1"\n', encoding="utf-8")
    (package / "__init__.py").write_text('"""ScalarMix in two modules."""\n', encoding="utf-8")
    (package / "weights.py").write_text(HELPER.lstrip(), encoding="utf-8")
    (package / "adapter.py").write_text(
        ADAPTER.lstrip().replace("from helper import softmax", "from mixpkg.weights import softmax"), encoding="utf-8"
    )
    expected = {
        ("mixpkg/weights.py", "TOUCH -> not (TOUCH)"): "Survived",
        ("mixpkg/weights.py", "e / e.sum() -> None"): "Killed",
        ("mixpkg/adapter.py", "+ -> -"): "Killed",
    }
    args = ["--impl", "mixpkg.adapter:adapter", "--source", "mixpkg"]
    _mutate_and_check(with_mutate, tmp_path, args, "hand_example", expected)


def test_the_installed_mutate_builds_a_program_in_its_copy(with_mutate: WithMutate, tmp_path: Path) -> None:
    """(c) A `cmd:` program made by --build: a mutant the build refuses is a CompileError, one
    that builds is killed by a named test, one whose loop never ends is a Timeout at the test it
    hung in, and the user's folder never holds the program."""
    from tests.test_mutate_trust import PROGRAM_BUILD

    shutil.copy(ROOT / "tests" / "examples" / "outside_mix.py", tmp_path / "mix.py")
    (tmp_path / "Makefile").write_text("# built by the --build command\n", encoding="utf-8")
    expected = {
        ("mix.py", "e / total -> None"): "Killed",
        ("mix.py", "max -> min"): "CompileError",
        ("mix.py", "k += 1 -> pass"): "Timeout",
    }
    build = "grep -q 's.max()' mix.py && " + PROGRAM_BUILD.format(python=with_mutate.python)
    args = ["--impl", "cmd:./prog", "--source", "mix.py", "--build", build]
    _mutate_and_check(with_mutate, tmp_path, args, "hand_example or stable_for_large_s", expected)


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("gcov") is None, reason="needs cc and gcov")
def test_the_installed_mutate_measures_a_c_programs_lines_with_gcov(with_mutate: WithMutate, tmp_path: Path) -> None:
    """(d) A C program an implementer starts from (examples/c-skeleton, as they copy it), built
    by --build and measured by --coverage-build and gcov: the run says its lines were measured,
    a mutant of the mix is killed by the hand example, a mutant of the bad-magic exit by the
    §15.6 test that sends bytes that are not a frame, and a mutant of a line no selected test
    ran is NoCoverage; the user's folder holds no program and no counts afterwards."""
    from elmo_conformance.mutation.generate import generate

    shutil.copy(ROOT / "examples" / "c-skeleton" / "skeleton.c", tmp_path / "skeleton.c")
    (tmp_path / "Makefile").write_text("skeleton: skeleton.c\n\tcc -std=c11 -O2 -o $@ $< -lm\n", encoding="utf-8")
    lines = (tmp_path / "skeleton.c").read_text(encoding="utf-8").splitlines()

    def line_of(text: str, after: int = 0) -> int:
        """The number of the line `after` lines below the first that holds `text`."""
        return next(n for n, line in enumerate(lines, 1) if text in line) + after

    mix, magic = line_of("mix[i] = element(gamma, 0) * sum;"), line_of("expected a frame starting with 'ELMO'", 1)
    bad_s = line_of('return "s: expected a 1-D float array')
    assert lines[magic - 1].strip() == "return 1;", "the exit after answering a bad magic"
    expected = {
        f"skeleton.c:{mix}:36  * -> +": ("Killed", "test_hand_example_scalar_mix"),
        f"skeleton.c:{magic}:20  1 -> 0": ("Killed", "test_bytes_that_are_not_a_frame_get_a_protocol_error"),
        f"skeleton.c:{bad_s}:9  ": ("NoCoverage", None),  # the return of a bad `s`, commented out
    }
    labels = {m.label(tmp_path): m.id for m in generate(tmp_path / "skeleton.c", relative="skeleton.c")}
    chosen = {key: next(i for label, i in labels.items() if label.startswith(key)) for key in expected}
    before = _tree(tmp_path, "out")
    args = [
        "--impl",
        "cmd:./skeleton",
        "--source",
        "skeleton.c",
        "--build",
        "cc -std=c11 -O2 -o skeleton skeleton.c -lm",
    ]
    args += ["--coverage-build", "cc -std=c11 -O0 --coverage -o skeleton skeleton.c -lm"]
    args += ["-k", "hand_example_scalar_mix or not_a_frame", "--out", "out", "--no-html"]
    done = with_mutate.mutate(*args, *(a for i in chosen.values() for a in ("--mutant", i)), cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "line coverage (gcov):" in done.stdout, done.stdout[-3000:]
    report = json.loads((tmp_path / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    by_id = {m["id"]: m for entry in report["files"].values() for m in entry["mutants"]}
    for key, (status, killer) in expected.items():
        mutant = by_id[chosen[key]]
        assert mutant["status"] == status, (key, mutant)
        if killer:
            assert len(mutant["killedBy"]) == 1 and killer in mutant["killedBy"][0], (key, mutant)
    tests = {t["id"] for entry in report["testFiles"].values() for t in entry["tests"]}
    assert len(tests) == 2, "the hand example and the bytes that are not a frame, float64 only"
    assert _tree(tmp_path, "out") == before, "a build, the counts or a mutant wrote into the user's folder"
    assert not _mutants_left(with_mutate.python.parent.parent)
