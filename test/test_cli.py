"""The ``rbd-estimator`` console script's own behaviour (its commands are tested with what they run:
test_replay.py, test_fleet.py, test_cold_start.py)."""
from __future__ import annotations

import io
import warnings

from rbd_estimator.cli import plain_warnings
from rbd_estimator.errors import ConditioningWarning
from rbd_estimator.replay import Progress


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


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_replay_progress_is_one_line_in_a_pipe_and_redrawn_on_a_terminal():
    """Into a pipe or a log (no terminal) the progress of ``rbd-estimator replay`` is one line at the end,
    with where the replay got to (its redraws were one line each, the last one twice); on a terminal
    it is redrawn in place (``\\r``) and ended by a newline."""
    pipe, tty = io.StringIO(), _Terminal()
    for stream in (pipe, tty):
        progress = Progress(stream)
        for done in (40, 100, 100):                 # the replay's batches, then its final call
            progress(done, 100)
        progress.close()
    assert pipe.getvalue().count("\n") == 1 and "\r" not in pipe.getvalue()
    assert pipe.getvalue().startswith("[###") and "100/100 messages" in pipe.getvalue()
    assert tty.getvalue().startswith("\r[") and tty.getvalue().endswith("\n") and "100.0%" in tty.getvalue()
    quiet = io.StringIO()
    Progress(quiet).close()                          # nothing replayed: nothing written
    assert quiet.getvalue() == ""
