"""The ``rbd-estimator`` console script's own behaviour (its commands are tested with what they run:
test_replay.py, test_fleet.py, test_cold_start.py)."""
from __future__ import annotations

import warnings

from rbd_estimator.cli import plain_warnings
from rbd_estimator.errors import ConditioningWarning


def test_the_command_line_prints_library_warnings_without_python_source_lines(capsys):
    """A planning warning, as ``rbd-estimator replay`` meets one, is one ``warning: …`` line on stderr,
    not Python's ``path/to/contacts.py:32: ConditioningWarning: …`` with the source line after it;
    outside the command the warning machinery is as it was."""
    said = "rbd_estimator: at the nominal stance (joints at zero) the sensors do not determine l_foot fy"
    before = warnings.showwarning
    with plain_warnings():
        warnings.simplefilter("always")
        warnings.warn(said, ConditioningWarning)
    assert capsys.readouterr().err == f"warning: {said}\n"
    assert warnings.showwarning is before
