"""Typed command-line values: every numeric flag is parsed with its range, every path flag refuses
an empty string, and a bad value is one line (``sipt-lab: error: argument --lr: ...``), exit 2.

``integer`` and ``number`` build argparse ``type=`` callables; :class:`OneLineParser` is the parser
class of ``sipt-lab`` and all its subcommands (argparse's own usage block is left out of errors,
``--help`` still shows it).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import shorten

#: Largest value of a signed 64-bit integer: the bound of every integer flag (seeds included).
INT64_MAX = 2**63 - 1


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise a :class:`SiptError` naming the problem and
    ``--help`` (so the CLI prints them as one line, exit status 2, like every other bad input)."""

    def error(self, message: str):  # argparse's hook
        flag = re.match(r"argument ([^:/ ]+)(?:/\S+)?: (.*)", message, re.S)
        if flag:  # "argument --lr: must be ..." -> "--lr must be ...", as library errors name flags
            message = f"{flag[1]} {flag[2]}"
        raise SiptError(f"{' '.join(message.split())} (see {self.prog} --help)")


def integer(low: int | None = None, high: int = INT64_MAX) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]`` (``low`` None: no lower bound beyond int64)."""
    low_bound = -INT64_MAX - 1 if low is None else low

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {shorten(text)}") from None
        if not low_bound <= value <= high:
            if high != INT64_MAX:
                bound = _interval(low, high, False, False)
            else:
                bound = f">= {low:,}" if value < low_bound else f"<= {high:,} (a 64-bit integer)"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {shorten(value, 40) if value > high else value}")
        return value

    parse.__name__ = "integer"
    return parse


def number(low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite float in the interval from ``low`` to ``high`` (None: unbounded;
    ``low_open`` / ``high_open`` exclude that end)."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {shorten(text)}") from None
        too_low = low is not None and (value <= low if low_open else value < low)
        too_high = high is not None and (value >= high if high_open else value > high)
        if not math.isfinite(value) or too_low or too_high:
            raise argparse.ArgumentTypeError(f"must be a finite number {_interval(low, high, low_open, high_open)}, "
                                             f"got {shorten(text)}")
        return value

    parse.__name__ = "number"
    return parse


def nonempty(text: str) -> str:
    """An argparse type for a path or name: anything but an empty or blank string (an unset shell
    variable would otherwise mean the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; pass a value (an unset shell variable?)")
    return text


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    def show(value) -> str:
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"

    if low is not None and high is not None and high != INT64_MAX:
        return f"in {'(' if low_open else '['}{show(low)}, {show(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {show(low)}" + ("" if high is None else f" and <= {show(high)}")
    return "" if high is None else f"{'<' if high_open else '<='} {show(high)}"


#: Shared ranges: seeds and counts that must be at least one.
SEED = integer(0)
POSITIVE_INT = integer(1)
FRACTION = number(0.0, 1.0)
POSITIVE = number(0.0, low_open=True)
