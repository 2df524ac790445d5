"""argparse types: values checked while the command line is parsed, before any work.

A value they refuse is argparse's usage error (exit 2, the message naming the option). Every
number is made by one factory, :func:`number`; the option types of the commands are its
instances.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable, TypeVar

from .data.sources import check_download_options
from .errors import UsageError

N = TypeVar("N", int, float)


def number(kind: Callable[[str], N], *, minimum: N, strict: bool = False, name: str,
           message: str, range_message: str | None = None) -> Callable[[str], N]:
    """An argparse type: the text as ``kind`` (``int`` or ``float``), finite and at least
    ``minimum`` (above it when ``strict``).

    Args:
        kind: ``int`` (a whole number) or ``float``.
        minimum, strict: the least value (``strict``: values must be above it).
        name: the type's name (``__name__``, what argparse would call it).
        message: the error for a text that is not such a number, or out of range;
            ``{text!r}`` and ``{value}`` stand for the text and the number read.
        range_message: the error for a number out of range, when it differs from
            ``message``.

    >>> seconds = number(float, minimum=0, strict=True, name="seconds",
    ...                  message="expected a number of seconds > 0, not {text!r}")
    >>> seconds("2.5")
    2.5
    >>> seconds("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a number of seconds > 0, not '0'
    """
    def parse(text: str) -> N:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(message.format(text=text, value=None)) from None
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            raise argparse.ArgumentTypeError(
                (range_message or message).format(text=text, value=value))
        return value
    parse.__name__ = name
    return parse


#: A whole number >= 0 (retries, seeds, counts).
count = number(int, minimum=0, name="count",
               message="expected a whole number >= 0, not {text!r}",
               range_message="must be >= 0, not {value}")
#: A whole number >= 1 (processes, resamples).
positive_int = number(int, minimum=1, name="positive_int",
                      message="{text!r} is not a whole number of 1 or more")
#: A finite number of seconds > 0 (timeouts, deadlines).
positive_seconds = number(float, minimum=0.0, strict=True, name="seconds",
                          message="expected a number of seconds > 0, not {text!r}")
#: A finite number of seconds >= 0 (a wait that may be none).
seconds = number(float, minimum=0.0, name="seconds",
                 message="expected a number of seconds >= 0, not {text!r}")
#: A finite number > 0 (a width).
positive_number = number(float, minimum=0.0, strict=True, name="positive_number",
                         message="{text!r} is not a number > 0")
#: Any finite number (not nan, not inf): the ends of a scale, a float field of RunConfig
#: (whose own checks say what else is refused).
finite_number = number(float, minimum=-math.inf, name="finite_number",
                       message="{text!r} is not a finite number")


def at_most(parse: Callable[[str], N], maximum: N, message: str) -> Callable[[str], N]:
    """``parse`` (a :func:`number` type) that also refuses values above ``maximum``, with
    ``message`` (``{text!r}`` and ``{value}`` as in :func:`number`)."""
    def bounded(text: str) -> N:
        value = parse(text)
        if value > maximum:
            raise argparse.ArgumentTypeError(message.format(text=text, value=value))
        return value
    bounded.__name__ = parse.__name__
    return bounded


#: BM25's k1: a finite number >= 0.
bm25_k1 = number(float, minimum=0.0, name="bm25_k1",
                 message="expected a finite number >= 0 (BM25's k1; the benchmark's 0.9), "
                 "not {text!r}")
#: BM25's b: a finite number from 0 to 1.
bm25_b = at_most(number(float, minimum=0.0, name="bm25_b",
                        message="expected a finite number from 0 to 1 (BM25's b; the "
                        "benchmark's 0.4), not {text!r}"), 1.0,
                 "expected a finite number from 0 to 1 (BM25's b; the benchmark's 0.4), not "
                 "{text!r}")


def url_template(text: str) -> str:
    """argparse type: a download URL template with known placeholders only."""
    try:
        check_download_options(url_template=text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def comma_list(text: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``: the items of a comma-list option, stripped."""
    return [x.strip() for x in text.split(",")]
