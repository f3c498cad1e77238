"""Loads the harness plugin (and the report pages' plugin, conformance/hooks.py) for `pytest conformance` in a checkout.

`pytest_plugins` registers the plugin under its module name. Where the package is installed (a
wheel, an editable install), pytest has already registered it under that same name through the
`pytest11` entry point, and then skips this one: the hooks are registered exactly once.
"""

pytest_plugins = ["elmo_conformance.conformance.plugin", "elmo_conformance.pages.plugin"]
