"""Child processes that a test interrupts with Ctrl-C (SIGINT) as a user at a terminal would."""
from __future__ import annotations

import signal


def ctrl_c_restored() -> None:
    """``preexec_fn`` of such a child: a suite started in the background (``cmd &`` in a script,
    nohup) has SIGINT ignored, children inherit that, and Python then installs no KeyboardInterrupt:
    the child would go on after the test's Ctrl-C (seen: `tfhadoop tensorboard` still serving 30 s
    after it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
