"""How kwire's long-running commands (``kwire serve``, ``kwire record``) are stopped: by SIGTERM or SIGINT,
handled on their event loop.

Both signals are handled by the loop whatever the process inherited.  A SIGTERM left to its default ends the
process without its cleanup (``kwire record``'s capture without its Parquet footer, which makes it unreadable), and
a SIGINT that a non-interactive shell ignored for a job it started in the background would not stop the command at
all: Python installs no SIGINT handler where it inherits the signal ignored, and asyncio installs none of its own.
"""

import contextlib
import signal

#: The signals that stop a long-running command cleanly, as its own end (a duration, a control command) does.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def stop_signals_handled(loop, callback, signals=STOP_SIGNALS):
    """Within the block, each of ``signals`` calls ``callback()`` on ``loop``; the handlers are removed after it."""
    for sig in signals:
        loop.add_signal_handler(sig, callback)
    try:
        yield
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
