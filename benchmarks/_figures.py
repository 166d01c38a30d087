"""What every benchmark script shares: timing a call, and the figures it prints.

A script prints one figure per line, `name: value unit (target …)`, and exits 1 when it missed a target.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def timed(fn: Callable[[], object], count: int) -> list[float]:
    """Call `fn` `count` times; return each call's duration in seconds."""
    out = []
    for _ in range(count):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


class Figures:
    """The figures of one run, printed together at the end; remembers whether a target was missed."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.missed = False

    def report(self, name: str, value: float, unit: str, target: str | None = None, ok: bool = True) -> None:
        """Print one figure at once (a long run that is stopped keeps what it measured)."""
        self.missed |= not ok
        suffix = f" (target {target}{'' if ok else ', MISSED'})" if target else ""
        self.lines.append(f"{name}: {value:.2f} {unit}{suffix}")
        print(self.lines[-1], flush=True)

    def print(self) -> int:
        """Return the script's exit status (the figures were printed as they came)."""
        return 1 if self.missed else 0


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
