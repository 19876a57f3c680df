"""Starting the command-line processes that tests interrupt."""

from __future__ import annotations

import signal


def interruptible() -> None:
    """`preexec_fn` for a child that a test sends SIGINT: restore SIGINT's default action.

    A command run in the background by a shell without job control (`make test &` in a
    script, `nohup ... &`) starts with SIGINT ignored (POSIX), its children inherit that, and
    Python then never raises KeyboardInterrupt: the Ctrl-C tests would see the run go on to
    its end. A terminal's foreground job, what those tests stand for, has the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
