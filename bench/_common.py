"""Shared helpers for the benchmarks: timing percentiles, peak RSS and a tiny table printer.

Not a benchmark itself (the leading underscore keeps it out of ``bench/*.py`` listings of
commands). Every figure is wall-clock ``time.perf_counter`` time; percentiles use the
nearest-rank method, so p50 and p95 are always values that were actually measured.
"""

from __future__ import annotations

import math
import resource
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Timings", "peak_rss_mb", "percentile", "print_table", "time_calls", "timed"]


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..100) of ``values``; NaN when there are none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(share / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class Timings:
    """Wall-clock samples of one operation, in milliseconds."""

    samples_ms: tuple[float, ...]

    @property
    def count(self) -> int:
        """How many samples."""
        return len(self.samples_ms)

    @property
    def p50(self) -> float:
        """Median, ms."""
        return percentile(self.samples_ms, 50)

    @property
    def p95(self) -> float:
        """95th percentile, ms."""
        return percentile(self.samples_ms, 95)

    @property
    def max(self) -> float:
        """Slowest sample, ms."""
        return max(self.samples_ms) if self.samples_ms else math.nan

    @property
    def mean(self) -> float:
        """Mean, ms."""
        return sum(self.samples_ms) / len(self.samples_ms) if self.samples_ms else math.nan


def time_calls(func: Callable[[Any], object], inputs: Iterable[Any]) -> tuple[Timings, list[object]]:
    """Call ``func`` once per input; return the timings and the results (in input order)."""
    samples: list[float] = []
    results: list[object] = []
    for item in inputs:
        start = time.perf_counter()
        results.append(func(item))
        samples.append((time.perf_counter() - start) * 1000)
    return Timings(tuple(samples)), results


def timed(func: Callable[[], object]) -> tuple[object, float]:
    """Call ``func`` once; return its result and the seconds it took."""
    start = time.perf_counter()
    result = func()
    return result, time.perf_counter() - start


def peak_rss_mb() -> float:
    """The process's peak resident set size so far, in MiB (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _cell(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _is_number(cell: str) -> bool:
    return cell == "-" or cell.replace(",", "").replace(".", "").removeprefix("-").isdigit()


def print_table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, title: str | None = None) -> None:
    """Print rows under headers, text left-aligned and numbers right-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    numeric = [bool(cells) and all(_is_number(row[i]) for row in cells) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    if title:
        print(title)
    print(line(headers))
    print(line(["-" * w for w in widths]))
    for row in cells:
        print(line(row))
