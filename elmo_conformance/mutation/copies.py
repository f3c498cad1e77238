"""Running an implementation from a copy of its project (spec §13.2): the import hook that loads
every module whose file lies in the project root from the same place in the copy.

With it, a module found through the user's folder, a package installed in editable mode or an
adapter file named by its path is the copy's, `__file__` included, so that what the code writes
next to itself lands in the copy. Used by overlay.py (a served mutant, the control run) and by a
worker's baseline run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class FromCopy(importlib.abc.MetaPathFinder):
    """Finds every module as usual; one whose file lies in the project root is loaded from the
    same place in the copy (when the copy has that file)."""

    def __init__(self, root: str, copy: str) -> None:
        self.roots = tuple(dict.fromkeys([os.path.abspath(root), os.path.realpath(root)]))
        self.copy = copy

    def mapped(self, path: str) -> str | None:
        """`path` in the copy, or None when it is not inside the project root."""
        for root in self.roots:
            for candidate in (os.path.abspath(path), os.path.realpath(path)):
                if inside(candidate, root):
                    return os.path.join(self.copy, os.path.relpath(candidate, root))
        return None

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001, ANN201
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.has_location or not spec.origin:
            return None
        origin = self.mapped(spec.origin)
        if origin is None or not os.path.isfile(origin):
            return None
        locations = None
        if spec.submodule_search_locations is not None:
            locations = [self.mapped(p) or p for p in spec.submodule_search_locations]
        return importlib.util.spec_from_file_location(fullname, origin, submodule_search_locations=locations)
