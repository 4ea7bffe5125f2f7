"""Progress of long work (fitting teachers, their votes, answering rows).

With ``verbose`` an estimator reports how far a long step has got: units
done of the total, the time elapsed and an estimate of the rest, through a
:mod:`tqdm` progress bar when tqdm is installed and otherwise as plain lines
on standard error. Only public counts are shown (teachers fitted, teachers
evaluated, query rows answered), never a vote, a distance, noise or a
threshold.

Plain lines come at a steady rate: one when a new tenth of the work is
done, one at least every :data:`_PLAIN_INTERVAL` seconds while updates
arrive, and one at the end; work that ends within ``delay`` seconds prints
nothing.
"""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]

# tqdm's bar class, imported on first use (optional: pip install
# "dpsklearn[progress]"); None when tqdm is not installed.
_UNSET = object()
_tqdm = _UNSET


def _bar_class():
    global _tqdm
    if _tqdm is _UNSET:
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - depends on the environment
            tqdm = None
        _tqdm = tqdm
    return _tqdm


# Seconds between two plain lines when no new tenth is reached.
_PLAIN_INTERVAL = 5.0


def _seconds(value):
    if value < 60:
        return f"{value:.1f} s"
    minutes, seconds = divmod(int(round(value)), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{seconds:02d}"
    return f"{minutes}:{seconds:02d}"


class Progress:
    """A progress report of ``total`` units of work.

    Parameters
    ----------
    total : int
        Units of work (teachers, query rows).
    desc : str
        What is being done, for the report ("fitting teachers").
    unit : str
        The unit, singular ("teacher", "row").
    verbose : int
        Nothing is reported when 0.
    delay : float, default=0.0
        Seconds of work before anything is shown: short work stays quiet.
    file : file object, default=sys.stderr
    bar : bool, default=None
        Whether to draw a tqdm bar (``None``: when tqdm is installed).
    leave : bool, default=True
        Whether a tqdm bar stays on screen once done (``False`` for steps of
        a larger piece of work).

    Examples
    --------
    >>> import io
    >>> from dpsklearn._progress import Progress
    >>> out = io.StringIO()
    >>> with Progress(4, desc="fitting teachers", unit="teacher", verbose=1,
    ...               file=out, bar=False) as progress:
    ...     for _ in range(4):
    ...         progress.update(1)
    >>> out.getvalue().splitlines()[-1].split(" in ")[0]
    '[dpsklearn] fitting teachers: 4 of 4 teachers (100%)'
    """

    def __init__(
        self,
        total,
        *,
        desc,
        unit,
        verbose,
        delay=0.0,
        file=None,
        bar=None,
        leave=True,
    ):
        self.total = max(0, int(total))
        self.desc = desc
        self.unit = unit
        self.verbose = int(verbose or 0)
        self.delay = float(delay)
        self.file = sys.stderr if file is None else file
        self.done = 0
        self.n_reports = 0  # lines printed or bar updates shown
        self._start = time.perf_counter()
        self._last_line = None
        self._last_tenth = 0
        self._bar = None
        bar_class = _bar_class() if self.verbose and bar is not False else None
        if bar_class is not None:
            self._bar = bar_class(
                total=self.total,
                desc=f"[dpsklearn] {desc}",
                unit=f" {unit}",
                delay=self.delay,
                file=self.file,
                leave=leave,
                dynamic_ncols=True,
            )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def update(self, n):
        """``n`` more units are done."""
        if not self.verbose or n <= 0:
            return
        self.done = min(self.total, self.done + int(n))
        if self._bar is not None:
            self._bar.update(int(n))
            self.n_reports += 1
            return
        elapsed = time.perf_counter() - self._start
        if elapsed < self.delay and self.done < self.total:
            return
        tenth = (10 * self.done) // max(1, self.total)
        due = self._last_line is None or (
            time.perf_counter() - self._last_line >= _PLAIN_INTERVAL
        )
        if tenth > self._last_tenth or due or self.done == self.total:
            if elapsed < self.delay:  # finished before the delay: stay quiet
                return
            self._last_tenth = tenth
            self._line(elapsed)

    def _line(self, elapsed):
        share = self.done / max(1, self.total)
        rest = ""
        if 0 < self.done < self.total:
            rest = f", about {_seconds(elapsed * (1 - share) / share)} left"
        plural = "" if self.total == 1 else "s"
        print(
            f"[dpsklearn] {self.desc}: {self.done} of {self.total} {self.unit}"
            f"{plural} ({100 * share:.0f}%) in {_seconds(elapsed)}{rest}",
            file=self.file,
            flush=True,
        )
        self._last_line = time.perf_counter()
        self.n_reports += 1

    def close(self):
        """End the report (the bar is closed; a plain report is complete)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
