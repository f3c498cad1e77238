"""The suite's command-line options (pytest_addoption of the plugin, conformance/plugin.py)."""

from __future__ import annotations

import importlib.util

import pytest

from elmo_conformance.conformance.keys import DTYPES


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("elmo-conformance")
    group.addoption(
        "--impl",
        action="append",
        default=[],
        help="adapter to check: a built-in name (numpy, torch, ...), an installed adapter's name (entry point group "
        "elmo_conformance.adapters), a .py file with an `adapter`, package.module:attr, or 'cmd:PROGRAM ARGS'; "
        "repeatable; default: every built-in adapter whose dependencies are installed",
    )
    group.addoption("--dtype", action="append", choices=DTYPES, default=[], help="only these dtypes (repeatable)")
    group.addoption("--report", metavar="PATH", help="write a JSON report of every test outcome to PATH")
    group.addoption(
        "--call-timeout", type=float, default=120.0, metavar="SECONDS", help="fail an adapter call that takes longer"
    )
    group.addoption(
        "--xfails-file",
        action="append",
        default=[],
        metavar="PATH",
        help="expected failures: test patterns with '# reason' comments, one a line (conformance/xfails.py); repeatable",
    )
    group.addoption("--pass-table", metavar="PATH", help="write the pass table (tests x adapter-dtype) as JSON to PATH")
    group.addoption(
        "--mutant",
        metavar="ID",
        help="check each --impl adapter's mutant ID (adapter.mutants[ID](), §11, §13) in place of the adapter",
    )
    group.addoption(
        "--in-process",
        action="store_true",
        help="import and call Python adapters in this process (for pdb; --pdb and --trace imply it); by default "
        "each runs in a child process behind the protocol server, so that a hang or a crash fails one test (§11)",
    )
    group.addoption(
        "--no-sandbox",
        action="store_true",
        help="run adapter processes and programs without the sandbox (bubblewrap, docs/sandbox.md), with your "
        "rights: only for code you trust",
    )
    group.addoption(
        "--sandbox-limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a limit of the sandbox: memory=2G (private memory), processes=1024, file-size=1G, cpu=3600 (seconds), "
        "or NAME=none; repeatable (defaults: PrairieLearn's, elmo_conformance/processes/sandbox.py)",
    )
    html_help = "write the run's self-contained HTML page to PATH (--report PATH.json also writes PATH.html)"
    try:
        if importlib.util.find_spec("pytest_html") is not None:  # installed, it may load after this plugin
            raise ValueError("--html belongs to pytest-html")
        group.addoption("--html", "--conformance-html", dest="conformance_html", metavar="PATH", help=html_help)
    except ValueError:  # another plugin (pytest-html) owns --html
        group.addoption("--conformance-html", dest="conformance_html", metavar="PATH", help=html_help)
