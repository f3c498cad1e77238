"""The failing example of a property test, for its failure message (§14).

Hypothesis attaches the failing example to the exception as notes (PEP 678): the call, each
labelled draw (`Draw 3 (L): 1`; strategies.py labels every draw) and how to replay it. A test
that fails with `checks.fail` (pytest.fail without a traceback) shows only the exception's text, so
the plugin adds the draws and the replay line as a section of the failure, at every verbosity,
in the terminal and in the --report JSON's message.
"""

from __future__ import annotations

import re

_DRAW = re.compile(r"^Draw \d+(?: \((?P<label>[^)]*)\))?: (?P<value>.*)$", re.S)


def failing_example(exc: BaseException | None) -> str | None:
    """The labelled draws of the failing example (one `label = value` a line) and the replay
    line Hypothesis printed, or None when `exc` carries no Hypothesis example."""
    notes = [note for note in getattr(exc, "__notes__", None) or () if isinstance(note, str)]
    lines = []
    for note in notes:
        match = _DRAW.match(note.strip())
        if match:
            lines.append(f"{match.group('label') or 'draw'} = {match.group('value')}")
    replay = [note.strip() for note in notes if "@reproduce_failure(" in note]
    if not lines and not replay:
        return None
    return "\n".join(lines + replay)
