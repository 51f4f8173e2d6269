"""The work a process starts ahead of its items (the project's build at collection, the judge sessions and
``coqchk`` after it), each in a cancel scope killed when the process exits, and its share of it under pytest-xdist."""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable
from typing import Any


def worker_share(options: dict[str, Any]) -> tuple[int, int]:
    """(this process's index, the number of processes) of the run, as the plugin read it from pytest-xdist
    (``options["worker_share"]``; ``gw3`` of 4: (3, 4)); (0, 1) alone or when not given."""
    share = options.get("worker_share")
    if isinstance(share, (list, tuple)) and len(share) == 2 and all(isinstance(v, int) for v in share) \
            and share[1] >= 1:
        return share[0] % share[1], share[1]
    return 0, 1


#: the work this process started ahead of its items (the build at collection, the judge sessions and coqchk after
#: it): each thread with its cancel scope, so that none of their processes outlives the run (:func:`stop_ahead`)
_AHEAD: list[tuple[threading.Thread, Any]] = []
_AHEAD_LOCK = threading.Lock()


def start_ahead(name: str, step: Callable[..., None], *args: Any) -> None:
    """``step(*args)`` in a daemon thread (the run never waits for it at exit), in a cancel scope that
    :func:`stop_ahead` cancels when the process exits: its processes are killed then, never left running."""
    from pytest_forall.core.proc import CancelScope, scoped

    scope = CancelScope()
    thread = threading.Thread(target=scoped(scope, step), args=args, name=name, daemon=True)
    with _AHEAD_LOCK:
        if not _AHEAD:
            atexit.register(stop_ahead)
        _AHEAD.append((thread, scope))
    thread.start()


def stop_ahead(grace: float = 10.0) -> None:
    """Kill the processes of the work started ahead that is still running (the run ended, normally or by Ctrl-C,
    before it was needed) and give its threads ``grace`` seconds to unwind (nothing is recorded of a killed build,
    judge session or coqchk: the next run does it again)."""
    with _AHEAD_LOCK:
        running = [(thread, scope) for thread, scope in _AHEAD if thread.is_alive()]
        _AHEAD.clear()
        atexit.unregister(stop_ahead)
    for _, scope in running:
        scope.cancel()
    deadline = time.monotonic() + grace
    for thread, _ in running:
        thread.join(max(0.0, deadline - time.monotonic()))

