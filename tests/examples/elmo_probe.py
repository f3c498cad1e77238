"""A pytest plugin for the harness's own tests (tests/test_console.py, tests/test_wheel.py): at the
start of the session it records how often the harness's hooks are registered and where every
module of the suite was imported from, into the JSON file $ELMO_PROBE_OUT."""

import json
import os
import sys


def pytest_sessionstart(session):
    pm = session.config.pluginmanager
    impls = [
        i
        for i in pm.hook.pytest_collection_modifyitems.get_hookimpls()
        if getattr(i.function, "__module__", "").endswith("conformance.plugin")
    ]
    names = [n for n, p in pm.list_name_plugin() if getattr(p, "__name__", "").endswith("conformance.plugin")]
    modules = {
        n: getattr(m, "__file__", None)
        for n, m in list(sys.modules.items())
        if n.split(".")[0] in ("elmo_conformance", "conformance", "fixtures", "reference", "adapters", "spec")
    }
    with open(os.environ["ELMO_PROBE_OUT"], "w") as handle:
        json.dump({"hookimpls": len(impls), "names": names, "modules": modules}, handle)
