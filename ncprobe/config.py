"""What makes a config class the one place a probe's run options are declared.

A config class is a frozen dataclass whose fields are the run options, each with its default,
its check (in ``__post_init__``) and its ``help`` metadata. From it come: the command line's
options (:func:`ncprobe.probes.options.config_options`), the keyword options of the function
that runs the probe (:func:`config_of`, as :func:`ncprobe.compute` takes ``model=...``) and
that function's signature as ``help()`` and editors show it (:func:`takes_config`). Each
probe's config class lives in the probe's package (NCIMP's
:class:`~ncprobe.ncimp.config.RunConfig`); this module names no probe.
"""

from __future__ import annotations

import difflib
import inspect
import numbers
import textwrap
import typing
from dataclasses import MISSING, Field, field, fields
from typing import Any, Callable, Iterable, Mapping, TypeVar

from .errors import OptionError, UsageError

#: The bootstrap resamples of every probe's intervals by default (``n_boot``, ``--n-boot``):
#: the one default every config class, function and report of a probe takes.
N_BOOT = 1000

C = TypeVar("C")
F = TypeVar("F", bound=Callable[..., Any])


def device_field() -> Any:
    """The ``device`` field of a config that runs a model (``--device``): ``None``, the
    model's default."""
    return field(default=None, metadata={
        "help": "cpu, cuda, cuda:1, mps (default: cuda if available)"})


def dtype_field() -> Any:
    """The ``dtype`` field of a config that runs a model (``--dtype``): ``None``, the
    model's default."""
    return field(default=None, metadata={"help": "float32 (CPU default), float16, bfloat16"})


def batch_size_field(what: str = "sentences") -> Any:
    """The ``batch_size`` field of a config that runs a model (``--batch-size N``): ``what``
    per forward pass, 32 by default."""
    return field(default=32, metadata={
        "metavar": "N", "type": "positive_int",
        "help": f"{what} per forward pass (default %(default)s)"})


def accept_modified_field(files: str) -> Any:
    """The ``accept_modified_data`` field of a probe's config (``--accept-modified-data``):
    run on its data ``files`` (``"AStitch"``) edited on purpose instead of stopping."""
    return field(default=False, metadata={
        "help": f"run on {files} files that differ from their pinned upstream copy (edited on "
                "purpose) instead of stopping (exit 3); they are named in the notes and "
                "recorded in run.json"})


def field_default(f: Field) -> Any:
    """The default of a config field (every field of a config class has one: an option left
    out takes it)."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    raise TypeError(f"config field {f.name!r} has no default")


def config_of(cls: type[C], config: C | None, options: dict[str, Any], *, caller: str) -> C:
    """The config a function that takes ``config`` or keyword ``options`` runs with.

    Each option is a field of ``cls``; ``None`` stands for the field's default.

    Args:
        cls: the config class (a dataclass: :class:`RunConfig`, ...).
        config: an instance of ``cls``, or ``None``.
        options: the function's keyword options (its ``**options``).
        caller: the function's name, for the messages.

    Raises:
        OptionError: (a UsageError and a TypeError) an option that is no field of ``cls``
            (with the closest names, and every field), a ``config`` of another class, or
            both ``config`` and options.
        ValueError: a value ``cls`` refuses (its own checks).
    """
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    for name in options:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=3)
            raise OptionError(f"{caller}() got an unexpected keyword argument {name!r}"
                            + (f" (did you mean {' or '.join(close)}?)" if close else "")
                            + f"; its options are the fields of {cls.__name__}: "
                            + ", ".join(names))
    given = {name: value for name, value in options.items() if value is not None}
    if config is None:
        return cls(**given)
    if not isinstance(config, cls):
        raise OptionError(f"{caller}() takes a {cls.__name__} as its first argument, not "
                        f"{type(config).__name__} (give the options by name: "
                        f"{caller}({names[0]}=...))")
    if given:
        raise OptionError(f"give either a {cls.__name__} or keyword options, not both (got "
                        f"{', '.join(given)} with the {cls.__name__})")
    return config


def check_models(models: str | Iterable[str]) -> list[str]:
    """The models of one run of a probe (a name, or several), checked in one place for every
    probe's config: one named twice is refused (its runs would be pooled), and so is none.

    Raises:
        UsageError: ``model 'x' is named twice; ...`` (the first repeated), or ``no model
            given``.
    """
    out: list[str] = []
    for m in [models] if isinstance(models, str) else models:
        if m in out:
            raise UsageError(f"model {m!r} is named twice; each model is run once")
        out.append(m)
    if not out:
        raise UsageError("no model given")
    return out


def check_counts(config: object, least: Mapping[str, int]) -> None:
    """Refuse a count option of a probe's config that is not a whole number at least its
    least (NaN, infinite, negative, fractional or not a number), in the order of ``least``
    (option name -> its least value).

    Raises:
        UsageError: ``n_boot=-1 (--n-boot): give a whole number >= 0``.
    """
    for name, lowest in least.items():
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                or value < lowest:
            raise UsageError(f"{name}={value!r} (--{name.replace('_', '-')}): give a whole "
                             f"number >= {lowest}")


def document_fields(cls: type[C]) -> type[C]:
    """Class decorator: ``cls``'s docstring gains an ``Attributes`` section, one entry per
    field made from its ``help`` metadata (``%(default)s`` as the default), so that
    ``help(cls)`` and the API reference say what each field means without a second text
    to keep in step."""
    lines = ["", "", "    Attributes:"]
    for f in fields(cls):  # type: ignore[arg-type]
        text = f.metadata.get("help", "").replace("%(default)s", str(field_default(f)))
        lines += textwrap.wrap(f"{f.name}: {text.replace('%%', '%')}", width=92,
                               initial_indent=" " * 8, subsequent_indent=" " * 12,
                               break_on_hyphens=False)
    cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n".join(lines) + "\n    "
    # the API reference reads the source, where the section is not: docs/griffe_ncprobe.py
    # takes the docstring of a class marked so from the class itself
    cls._doc_from_fields = True  # type: ignore[attr-defined]
    return cls


def takes_config(cls: type) -> Callable[[F], F]:
    """Decorator: the function's signature, as :func:`inspect.signature`, ``help()`` and
    IPython show it, names the fields of ``cls`` (their types and defaults) in place of its
    ``**options``, before its other keyword-only parameters; the function itself is
    unchanged (:func:`config_of` makes its config)."""
    hints = typing.get_type_hints(cls)

    def decorate(func: F) -> F:
        sig = inspect.signature(func)
        params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
        first = [p for p in params if p.kind is not p.KEYWORD_ONLY]
        rest = [p for p in params if p.kind is p.KEYWORD_ONLY]
        options = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY,
                                     default=field_default(f), annotation=hints[f.name])
                   for f in fields(cls)]
        func.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[*first, *options, *rest])
        return func

    return decorate
