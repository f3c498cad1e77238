"""The console command `elmo-conformance` (`python -m elmo_conformance`), the plugin's registration
and inertness, adapters registered by entry point, reproduce commands and versions, in a checkout.
The same things from an installed wheel: tests/test_wheel.py.

A run never exits 0 unless every collected test ran and the report was written: the command runs
pytest as a child process, reads back the report, and stops a child that has finished but does
not exit (a thread an adapter left running)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest

import elmo_conformance
from elmo_conformance import cli
from elmo_conformance.adapters.loading import AdapterLoadError, AdapterNameClash, load_adapter
from elmo_conformance.fixtures.manifest import SPEC_VERSION
from elmo_conformance.ground import version
from elmo_conformance.ground.resources import ADAPTERS_GROUP, PLUGIN, spec_version

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "tests" / "broken"

# The reliability work runs Python adapters in a child process by default; these tests need the
# adapter in the harness's own process, where os._exit and a leaked thread reach pytest itself.
IN_PROCESS = ["--in-process"]

# A pytest plugin that records how often the harness's hooks are registered and where every
# module of the suite was imported from; copied into the folder a test puts on PYTHONPATH.
PROBE = ROOT / "tests" / "examples" / "elmo_probe.py"


def probe(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROBE, folder / "elmo_probe.py")
    return folder


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600):
    """The command with the environment of this process, less PYTHONPATH, plus `env`."""
    merged = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | (env or {})
    return subprocess.run(command, cwd=cwd, env=merged, capture_output=True, text=True, timeout=timeout)


def console(*args: str) -> list[str]:
    return [sys.executable, "-m", "elmo_conformance", *args]


# ------------------------------------------------------------------------------ registration


def test_the_plugin_is_registered_once_in_a_checkout(tmp_path: Path) -> None:
    """No install: conformance/conftest.py registers it; `-p` with its name (the plain pytest
    reproduce command) as well: still once."""
    folder, out = probe(tmp_path / "probe"), tmp_path / "probe.json"
    env = {"PYTHONPATH": str(folder), "ELMO_PROBE_OUT": str(out)}
    base = [sys.executable, "-m", "pytest", "conformance/test_conventions.py", "--impl", "numpy", "-q"]
    for extra in ([], ["-p", PLUGIN]):
        done = run([*base, "-p", "elmo_probe", "-p", "no:cacheprovider", *extra], ROOT, env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        seen = json.loads(out.read_text())
        assert seen["hookimpls"] == 1 and seen["names"] == [PLUGIN], seen


def test_the_plugin_is_inert_in_a_run_that_does_not_target_the_suite(tmp_path: Path) -> None:
    """Loaded into a user's own pytest run (as the pytest11 entry point loads it into every run of
    an environment where the package is installed), it checks no fixture, loads no adapter,
    writes no report, keeps Hypothesis's settings and leaves the user's tests alone: a fixture
    named `case`, tests that cite no spec section."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_users_own.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from hypothesis import settings

            @pytest.fixture
            def case():
                return 3

            def test_uses_a_fixture_named_case(case):
                assert case == 3

            def test_the_suites_profile_is_not_loaded():
                assert settings.default.max_examples != 12
            """
        ),
        encoding="utf-8",
    )
    env = {"PYTHONPATH": str(ROOT), "ELMO_FIXTURES_DIR": str(tmp_path / "no-such-fixtures")}
    done = run([sys.executable, "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider", "-q"], project, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout
    assert sorted(p.name for p in project.iterdir() if p.suffix in (".json", ".html")) == []


# ------------------------------------------------------------------------------ the console command


def test_the_console_command_runs_from_another_directory_despite_its_pytest_configuration(tmp_path: Path) -> None:
    """A user's pyproject addopts and a conftest.py that would break any run of theirs do not reach
    the suite; the report, the pass table and the exit status are the suite's."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--no-such-option"\n', encoding="utf-8")
    (work / "conftest.py").write_text("raise RuntimeError('the user conftest was imported')\n", encoding="utf-8")
    args = ["--impl", "numpy", "--dtype", "float64", "-k", "test_hand_example", "--report", "r.json"]
    done = run(console(*args, "--pass-table", "t.json", "-q"), work, {"PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((work / "r.json").read_text())
    assert report["complete"] and report["collected"] == len(report["tests"]) >= 1
    table = json.loads((work / "t.json").read_text())
    assert table["suite_version"] == elmo_conformance.__version__ and table["spec_version"] == spec_version()
    assert not (work / ".pytest_cache").exists()


def test_the_printed_commands_reproduce_a_failure_from_another_directory(tmp_path: Path) -> None:
    """A failure prints the nox form, the console-command form and the plain pytest form; the last
    two work from the user's own directory."""
    adapter = str(BROKEN / "skip_softmax.py")
    done = run(console("--impl", adapter, "--dtype", "float32", "-k", "test_hand_example"), ROOT)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    [nox_form] = re.findall(r"^nox -s conformance -- (.+)$", done.stdout, flags=re.MULTILINE)
    [console_form] = re.findall(r"^elmo-conformance (.+)$", done.stdout, flags=re.MULTILINE)
    [pytest_form] = re.findall(r"^python -m pytest (.+)$", done.stdout, flags=re.MULTILINE)
    assert shlex.split(nox_form) == shlex.split(console_form)
    assert f"-p {PLUGIN}" in pytest_form and "--pyargs 'elmo_conformance.conformance.test_" in pytest_form
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for command in (console(*shlex.split(console_form)), [sys.executable, "-m", "pytest", *shlex.split(pytest_form)]):
        again = run([*command, "-p", "no:cacheprovider"], elsewhere, {"PYTHONPATH": str(ROOT)})
        assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout[-3000:] + again.stderr[-3000:]


def test_an_adapter_that_ends_the_process_with_status_0_is_not_a_pass(tmp_path: Path) -> None:
    adapter = tmp_path / "exits.py"
    adapter.write_text(
        textwrap.dedent(
            """
            import os
            from elmo_conformance.adapters.numpy import NumpyAdapter

            class Exits(NumpyAdapter):
                name = "exits"

                def bilm_loss(self, params, ids, lengths=None):
                    os._exit(0)

            adapter = Exits()
            """
        ),
        encoding="utf-8",
    )
    args = ["--impl", str(adapter), *IN_PROCESS, "--dtype", "float64", "-k", "test_hand_example or bilm_loss", "-q"]
    done = run(console(*args), ROOT)
    assert done.returncode == cli.NOT_FINISHED, done.stdout[-3000:] + done.stderr[-3000:]
    [line] = [line for line in done.stderr.splitlines() if line.startswith("elmo-conformance:")]
    assert "the run did not finish although pytest exited 0: its report says the run did not finish" in line


def test_a_thread_the_adapter_leaves_running_does_not_hold_the_run(tmp_path: Path) -> None:
    adapter = tmp_path / "leaks.py"
    adapter.write_text(
        textwrap.dedent(
            """
            import threading
            from elmo_conformance.adapters.numpy import NumpyAdapter

            _never = threading.Event()

            class Leaks(NumpyAdapter):
                name = "leaks"

                def scalar_mix(self, s, gamma, layers):
                    threading.Thread(target=_never.wait, name="left-running", daemon=False).start()
                    return super().scalar_mix(s, gamma, layers)

            adapter = Leaks()
            """
        ),
        encoding="utf-8",
    )
    args = ["--impl", str(adapter), *IN_PROCESS, "--dtype", "float64", "-k", "test_hand_example_scalar_mix", "-q"]
    started = time.monotonic()
    done = run(console(*args, "--report", str(tmp_path / "r.json")), ROOT, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert time.monotonic() - started < 240
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["complete"] and report["exit_status"] == 0 and report["collected"] == len(report["tests"]) == 1


# ------------------------------------------------------------------------------ adapters by entry point


@pytest.fixture
def installed_adapters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A distribution on sys.path that registers adapters by entry point, as an installed package does."""
    site = tmp_path / "site"
    info = site / "fake_adapters-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-adapters\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        f"[{ADAPTERS_GROUP}]\n"
        "mylib = elmo_conformance.adapters.numpy:NumpyAdapter\n"
        "numpy = elmo_conformance.adapters.numpy:NumpyAdapter\n"
        "broken = no_such_module_here:adapter\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(site))
    return site


def test_an_installed_package_registers_an_adapter_by_name(installed_adapters: Path) -> None:
    loaded = load_adapter("mylib")
    assert loaded.arg == "mylib" and loaded.name == "numpy" and "float64" in loaded.capabilities


def test_a_built_in_name_wins_a_clash_with_a_warning(installed_adapters: Path) -> None:
    with pytest.warns(AdapterNameClash, match="the built-in adapter 'numpy' is used"):
        loaded = load_adapter("numpy")
    assert type(loaded.adapter).__module__ == "elmo_conformance.adapters.numpy.adapter"


def test_an_installed_adapter_that_does_not_load_is_one_line(installed_adapters: Path) -> None:
    with pytest.raises(AdapterLoadError, match="loading the installed adapter no_such_module_here:adapter"):
        load_adapter("broken")
    with pytest.raises(AdapterLoadError, match=r"an installed adapter's name \(broken, mylib, numpy\)"):
        load_adapter("nonsense")


def test_the_console_command_runs_an_adapter_registered_by_entry_point(
    installed_adapters: Path, tmp_path: Path
) -> None:
    env = {"PYTHONPATH": f"{installed_adapters}:{ROOT}"}
    args = ["--impl", "mylib", "--dtype", "float64", "-k", "test_hand_example", "--report", "r.json", "-q"]
    done = run(console(*args), tmp_path, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert [a["impl"] for a in json.loads((tmp_path / "r.json").read_text())["adapters"]] == ["mylib"]


# ------------------------------------------------------------------------------ versions


def test_the_suite_has_one_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "elmo_conformance.ground.version.__version__"
    }
    assert version.__version__ == elmo_conformance.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", elmo_conformance.__version__)
    done = run(console("--version"), ROOT)
    assert done.stdout.startswith(f"elmo-conformance {elmo_conformance.__version__} (spec {spec_version()}")


def test_every_part_of_the_spec_carries_the_same_version() -> None:
    spec = ROOT / "spec"
    found = {"spec/elmo.md": re.search(r"^Version (\d+\.\d+)\.", (spec / "elmo.md").read_text(), re.M).group(1)}
    for name in ("protocol.json", "validation.json", "mutants.json", "tolerances.json"):
        found[f"spec/{name}"] = json.loads((spec / name).read_text())["spec_version"]
    found["fixtures/manifest.json"] = json.loads((ROOT / "fixtures" / "manifest.json").read_text())["spec_version"]
    found["fixtures.manifest.SPEC_VERSION"] = SPEC_VERSION
    assert set(found.values()) == {spec_version()}, found
