"""The probes of ncprobe, behind one seam: what each asks, its data, how it runs, its results.

A **probe** is a question asked of a model's representations, with its data, its run
options, its results tables, its report and its comparison: NCIMP (``ncimp``: how close a
noun compound's vector stays when a word is substituted, against its compositionality) and
IdioLink (``idiolink``: does the model retrieve sentences of the same meaning). A probe is
one class that satisfies :class:`~ncprobe.probes.base.Probe`, living in its own package, and
one entry of :data:`PROBES`; the command line (``ncprobe run PROBE``, ``ncprobe probes``,
``report``, ``compare``, ``models --probe``, ``data info|check``) and the Python API
(:func:`ncprobe.run`) find it here. Nothing outside a probe's package branches on its name.

(The stimuli's *substitutions* -- P_Syn, P_Comp, P_WordsSyn, P_Rand, the column ``probe`` of
NCIMP's tables -- are another thing: :data:`ncprobe.schema.SUBSTITUTIONS`.)

This module is a leaf: it imports a probe's module only when the probe is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..errors import UsageError

if TYPE_CHECKING:
    from .base import Probe, ProbeResults

__all__ = ["PROBES", "get_probe", "probe_names", "probe_of_config", "probes", "results_class",
           "run"]

#: The probes by name: ``module:class``, imported only when used. In the order
#: ``ncprobe probes`` lists them and ``data info`` shows their data.
PROBES: dict[str, str] = {
    "ncimp": "ncprobe.ncimp.seam:NcimpProbe",
    "idiolink": "ncprobe.retrieval.seam:IdioLinkProbe",
    "ncc": "ncprobe.ncc.seam:NccProbe",
    "astitch": "ncprobe.astitch.seam:AStitchProbe",
}

_LOADED: dict[str, "Probe"] = {}


def probe_names() -> tuple[str, ...]:
    """The names of every probe, in :data:`PROBES` order."""
    return tuple(PROBES)


def get_probe(name: str) -> "Probe":
    """The probe called ``name`` (one instance per process).

    Raises:
        UsageError: no probe of that name (naming the probes there are).
    """
    if name not in PROBES:
        raise UsageError(f"unknown probe {name!r}; the probes are {', '.join(PROBES)} "
                         "(`ncprobe probes` lists them)")
    if name not in _LOADED:
        module, _, attr = PROBES[name].partition(":")
        _LOADED[name] = getattr(importlib.import_module(module), attr)()
    return _LOADED[name]


def probes(names: Iterable[str] | str | None = None) -> list["Probe"]:
    """The probes ``names`` (a comma list, or names; ``None``: every probe), in
    :data:`PROBES` order.

    Raises:
        UsageError: an unknown name, or none given.
    """
    if names is None:
        return [get_probe(n) for n in PROBES]
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names)]
    bad = [n for n in wanted if n not in PROBES]
    if bad or not wanted:
        raise UsageError(f"unknown probe {', '.join(map(repr, bad or wanted))}; the probes are "
                         f"{', '.join(PROBES)}")
    return [get_probe(n) for n in PROBES if n in wanted]


def probe_of_config(config: Any) -> str | None:
    """The name of the probe whose run options ``config`` holds (an instance of its
    :meth:`~ncprobe.probes.base.Probe.config_class`, or of a subclass), or ``None``."""
    for name in PROBES:
        if isinstance(config, get_probe(name).config_class()):
            return name
    return None


def results_class(name: str) -> type["ProbeResults"]:
    """The results class of the probe ``name``."""
    return get_probe(name).results_class()


def run(probe: str, config: Any = None, /, **options: Any) -> "ProbeResults":
    """Run the probe ``probe`` (``ncprobe.run("idiolink", models=["minilm"])``): its run options
    as keywords (the fields of its config, e.g. :class:`~ncprobe.ncimp.config.RunConfig` for
    ``ncimp``), or its config object; returns its results. ``ncprobe.run("ncimp", ...)`` is
    :func:`ncprobe.compute`, ``ncprobe.run("idiolink", ...)`` :func:`ncprobe.retrieve`.

    Raises:
        UsageError: an unknown probe, or an option it does not take.
    """
    return get_probe(probe).run(config, **options)


def describe(table: Mapping[str, "Probe"] | None = None) -> list[str]:
    """One line per probe: its name, what it asks, its data and its result tables (what
    ``ncprobe probes`` prints)."""
    found = table if table is not None else {p.name: p for p in probes()}
    width = max(len(n) for n in found)
    return [f"{name:<{width}}  {p.asks} Data: {p.data}. Tables: {', '.join(p.tables())}."
            for name, p in found.items()]
