"""A one-line progress bar on stderr for the client's waits.

Our own, a few lines: the client's only dependency is httpx, and a wait's progress is a single
percentage (or none, while a card is computed) that one redrawn line shows.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30


class ProgressBar:
    """``update(done, total)`` redraws ``label [#####.....]  45%  note`` on one line; ``close()`` ends it.

    With ``total`` None the bar shows the seconds waited instead of a fraction. Disabled, it writes
    nothing. Used as a context manager it ends its line on exit.
    """

    def __init__(self, label: str, *, stream: TextIO | None = None, enabled: bool = True):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.started = time.monotonic()
        self.drawn = False

    def update(self, done: float | None = None, total: float | None = None, note: str = "") -> None:
        if not self.enabled:
            return
        if done is not None and total:
            share = min(max(done / total, 0.0), 1.0)
            filled = round(share * WIDTH)
            figure = f"[{'#' * filled}{'.' * (WIDTH - filled)}] {share:4.0%}"
        else:
            figure = f"{time.monotonic() - self.started:5.0f} s"
        line = f"{self.label} {figure}" + (f"  {note}" if note else "")
        self.stream.write("\r" + line + "\033[K")  # \033[K: erase what a longer line left
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.enabled and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
