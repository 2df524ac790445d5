"""The probes of ncprobe, behind one seam: what each asks, its data, how it runs, its results.

A **probe** is a question asked of a model's representations, with its data, its run
options, its results tables, its report and its comparison. Four are built in
(:data:`PROBES`): NCIMP (``ncimp``: how close a noun compound's vector stays when a word is
substituted, against its compositionality), IdioLink (``idiolink``: does the model retrieve
sentences of the same meaning), SemanticQA NCC (``ncc``: representation against behaviour,
item by item) and AStitch (``astitch``: token-level idiomaticity, layer by layer). A probe is
one class that satisfies :class:`~ncprobe.probes.base.Probe`, living in its own package, and
one entry of :data:`PROBES`; the command line (``ncprobe run PROBE``, ``ncprobe probes``,
``report``, ``compare``, ``models --probe``, ``data info|check``) and the Python API
(:func:`ncprobe.run`) find it here. Nothing outside a probe's package branches on its name.

A probe may also come from another distribution (a *plugin*): an entry point of the group
:data:`ENTRY_POINT_GROUP` (``ncprobe.probes``), ``NAME = "module:Class"``, read once per
process when the registry is first asked for more than a built-in probe
(``docs/extending.md`` builds one, ``examples/ncprobe-headsim``). Plugins come after the
built-in probes; one that cannot be used (a built-in's name or another plugin's, a module
that fails to import, a class that is no :class:`~ncprobe.probes.base.Probe`, a ``name``
other than its entry point's) is named on stderr, with what to do, and skipped: it never
stops or changes the built-in probes.

(The stimuli's *substitutions* -- P_Syn, P_Comp, P_WordsSyn, P_Rand, the column ``probe`` of
NCIMP's tables -- are another thing: :data:`ncprobe.schema.SUBSTITUTIONS`.)

This module is a leaf: it imports a probe's module only when the probe is asked for.
"""
from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple

from ..errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from ..concept import Concept
    from .base import Probe, ProbeResults

__all__ = ["ENTRY_POINT_GROUP", "PROBES", "Plugin", "concept", "concept_probes", "get_probe",
           "plugins", "probe_names", "probe_of_all", "probe_of_config", "probes", "provider",
           "results_by_probe", "results_class", "results_probe", "run", "verifiers"]

#: The built-in probes by name: ``module:class``, imported only when used. In the order
#: ``ncprobe probes`` lists them and ``data info`` shows their data (the plugins after
#: them: :func:`plugins`).
PROBES: dict[str, str] = {
    "ncimp": "ncprobe.ncimp.seam:NcimpProbe",
    "idiolink": "ncprobe.retrieval.seam:IdioLinkProbe",
    "ncc": "ncprobe.ncc.seam:NccProbe",
    "astitch": "ncprobe.astitch.seam:AStitchProbe",
    "amnesic": "ncprobe.amnesic.seam:AmnesicProbe",
}

#: The entry-point group a distribution declares its probes in (``NAME = "module:Class"``).
ENTRY_POINT_GROUP = "ncprobe.probes"

_LOADED: dict[str, "Probe"] = {}


class Plugin(NamedTuple):
    """A probe from another distribution: an entry point of :data:`ENTRY_POINT_GROUP`."""

    #: The entry point's name: the probe's name.
    name: str
    #: ``module:Class``.
    target: str
    #: The distribution that declares it, with its version (``ncprobe-headsim 0.1.0``).
    dist: str


#: The plugins read from the entry points (``None``: not read yet; once per process).
_PLUGINS: dict[str, Plugin] | None = None
#: Plugins found unusable when loaded, by name: why (each said once, on stderr).
_BROKEN: dict[str, str] = {}


def _skip(dist: str, entry: str, why: str, todo: str) -> str:
    """Say on stderr that the plugin ``entry`` (``NAME = module:Class``) of ``dist`` is
    skipped, ``why``, and ``todo``; returns the line."""
    line = (f"warning: plugin probe {entry} of the distribution {dist} skipped: {why}; "
            f"{todo}")
    print(line, file=sys.stderr)
    return line


def _fix(dist: str) -> str:
    return (f"fix the distribution {dist.split()[0]} or uninstall it (pip uninstall "
            f"{dist.split()[0]}); the other probes are not affected")


def plugins() -> dict[str, Plugin]:
    """The plugin probes declared by the installed distributions (entry points of
    :data:`ENTRY_POINT_GROUP`), by name, in the order found; read once per process. One that
    has a built-in probe's name or another plugin's is named on stderr and left out (the
    modules are not imported here: :func:`get_probe` imports one when it is asked for)."""
    global _PLUGINS
    if _PLUGINS is None:
        from importlib.metadata import entry_points

        found: dict[str, Plugin] = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            meta = ep.dist.metadata if ep.dist is not None else None
            dist = (f"{meta['Name']} {meta['Version']}" if meta is not None
                    else "(unknown distribution)")
            entry = f"'{ep.name} = {ep.value}'"
            if ep.name in PROBES:
                _skip(dist, entry, f"{ep.name!r} is the name of a built-in probe",
                      f"the entry point must name its probe otherwise; {_fix(dist)}")
            elif ep.name in found:
                _skip(dist, entry, f"{ep.name!r} is already the probe of "
                      f"{found[ep.name].dist}", "name the probes of two distributions "
                      f"apart, or uninstall one of them (pip uninstall {dist.split()[0]})")
            else:
                found[ep.name] = Plugin(ep.name, ep.value, dist)
        _PLUGINS = found
    return _PLUGINS


def probe_names() -> tuple[str, ...]:
    """The names of every probe: the built-in ones (:data:`PROBES` order), then the plugins
    (:func:`plugins`) less those found unusable so far."""
    return tuple(PROBES) + tuple(n for n in plugins() if n not in _BROKEN)


def provider(name: str) -> str | None:
    """The distribution (with its version) that provides the plugin probe ``name``; ``None``
    for a built-in probe."""
    found = plugins().get(name)
    return found.dist if found is not None and name not in PROBES else None


def _load(name: str) -> "Probe":
    """The probe ``name`` of :data:`PROBES` or :func:`plugins`, made once per process.

    Raises:
        UsageError: a plugin that cannot be used (said on stderr once, and left out of
            :func:`probe_names` from then on).
    """
    if name in _LOADED:
        return _LOADED[name]
    if name in PROBES:
        module, _, attr = PROBES[name].partition(":")
        _LOADED[name] = getattr(importlib.import_module(module), attr)()
        _LOADED[name].peers = PEERS
        return _LOADED[name]
    if name in _BROKEN:
        raise UsageError(_BROKEN[name])
    plugin = plugins()[name]
    entry = f"'{plugin.name} = {plugin.target}'"
    module, _, attr = plugin.target.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr or "")
    except Exception as e:  # a plugin's failure is named, never a traceback
        why = f"importing it raised {type(e).__name__}: {e}"
        todo = _fix(plugin.dist)
    else:
        from .base import Probe

        if not (isinstance(cls, type) and issubclass(cls, Probe)):
            why = f"{plugin.target} is not a subclass of ncprobe.probes.base.Probe"
            todo = "the entry point must name the probe's class; " + _fix(plugin.dist)
        elif getattr(cls, "name", None) != name:
            why = (f"its class's name is {getattr(cls, 'name', None)!r}, its entry point's "
                   f"{name!r}")
            todo = "the two must be the same; " + _fix(plugin.dist)
        else:
            try:
                _LOADED[name] = cls()
                _LOADED[name].peers = PEERS
                return _LOADED[name]
            except Exception as e:  # an abstract method left out, a failing init
                why = f"making the probe raised {type(e).__name__}: {e}"
                todo = _fix(plugin.dist)
    _BROKEN[name] = _skip(plugin.dist, entry, why, todo).removeprefix("warning: ")
    raise UsageError(_BROKEN[name])


def get_probe(name: str) -> "Probe":
    """The probe called ``name`` (one instance per process): a built-in probe, or a plugin
    (imported now, the first time).

    Raises:
        UsageError: no probe of that name (naming the probes there are), or a plugin that
            cannot be used (why, and what to do).
    """
    if name not in PROBES and name not in plugins():
        raise UsageError(f"unknown probe {name!r}; the probes are {', '.join(probe_names())} "
                         "(`ncprobe probes` lists them)")
    return _load(name)


def _usable(names: Iterable[str]) -> list["Probe"]:
    """The probes ``names`` that can be used, each plugin that cannot left out (said on
    stderr by :func:`_load`)."""
    out = []
    for name in names:
        try:
            out.append(_load(name))
        except UsageError:
            if name in PROBES:
                raise
    return out


def probes(names: Iterable[str] | str | None = None) -> list["Probe"]:
    """The probes ``names`` (a comma list, or names; ``None``: every probe, a plugin that
    cannot be used left out), in :func:`probe_names` order.

    Raises:
        UsageError: an unknown name, or none given, or a plugin named that cannot be used.
    """
    if names is None:
        return _usable(probe_names())
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names)]
    known = probe_names()
    bad = [n for n in wanted if n not in known]
    if bad or not wanted:
        raise UsageError(f"unknown probe {', '.join(map(repr, bad or wanted))}; the probes are "
                         f"{', '.join(known)}")
    return [get_probe(n) for n in known if n in wanted]


def probe_of_config(config: Any) -> str | None:
    """The name of the probe whose run options ``config`` holds (an instance of its
    :meth:`~ncprobe.probes.base.Probe.config_class`, or of a subclass), or ``None``."""
    for probe in probes():
        if isinstance(config, probe.config_class()):
            return probe.name
    return None


def results_class(name: str) -> type["ProbeResults"]:
    """The results class of the probe ``name``."""
    return get_probe(name).results_class()


def results_probe(name: str | None) -> str:
    """The probe whose results a ``run.json`` naming the probe ``name`` holds
    (:func:`ncprobe.results.store.probe_of`): ``name`` itself; for ``None`` (a ``run.json``
    that names no probe) the built-in probe that declares it reads such results
    (:attr:`~ncprobe.probes.base.Probe.reads_unnamed_results`: NCIMP's, whose results were
    written before probes were named)."""
    if name is not None:
        return name
    readers = [n for n in PROBES if _load(n).reads_unnamed_results]
    if len(readers) != 1:  # the built-in table itself is wrong: never a user's error
        raise RuntimeError(f"{len(readers)} built-in probes declare they read results whose "
                           f"run.json names no probe ({', '.join(readers) or 'none'}); one must")
    return readers[0]


def results_by_probe(paths: Iterable[Any], exclude: Iterable[Any] = (), *,
                     require_match: bool = False) -> dict[str, list["Path"]]:
    """Every results directory at or below ``paths`` (less those at or below ``exclude``),
    by the probe whose results it holds (:func:`ncprobe.results.store.results_by_probe`, a
    ``run.json`` that names no probe read as :func:`results_probe` says), in the order
    found."""
    from ..results import store

    out: dict[str, list[Path]] = {}
    for name, dirs in store.results_by_probe(paths, exclude,
                                             require_match=require_match).items():
        out.setdefault(results_probe(name), []).extend(dirs)
    return out


def probe_of_all(paths: Iterable[Any], exclude: Iterable[Any] = (), *, advice: str,
                 keep: Iterable[str] | None = None) -> str:
    """The one probe whose results every results directory at or below ``paths`` (less
    ``exclude``) holds (:func:`results_by_probe`); :func:`results_probe` ``(None)`` when none
    is found.

    Raises:
        UsageError: directories of different probes: the message names each probe's
            directories, says ``advice`` (why they cannot go together), and gives the
            ``--exclude`` options that leave out each probe's directories (those of the
            probes in ``keep`` only, when given: what leaving the others out could use).
    """
    from ..results.store import mixed_probes_message

    by_probe = results_by_probe(paths, exclude)
    if len(by_probe) > 1:
        raise UsageError(mixed_probes_message(by_probe, advice, keep))
    return next(iter(by_probe)) if by_probe else results_probe(None)


def run(probe: str, config: Any = None, /, **options: Any) -> "ProbeResults":
    """Run the probe ``probe`` (``ncprobe.run("idiolink", models=["minilm"])``): its run options
    as keywords (the fields of its config, e.g. :class:`~ncprobe.ncimp.config.RunConfig` for
    ``ncimp``), or its config object; returns its results. ``ncprobe.run("ncimp", ...)`` is
    :func:`ncprobe.compute`, ``ncprobe.run("idiolink", ...)`` :func:`ncprobe.retrieve`.

    Raises:
        UsageError: an unknown probe, or an option it does not take.
    """
    return get_probe(probe).run(config, **options)


def concept_probes() -> tuple[str, ...]:
    """The names of the probes that offer a concept
    (:attr:`~ncprobe.probes.base.Probe.offers_concept`), in :func:`probe_names` order (a
    plugin that cannot be used left out)."""
    return tuple(p.name for p in probes() if p.offers_concept)


def concept(probe: str, model: str, lang: str, **options: Any) -> "Concept":
    """The concept of the probe ``probe`` (:meth:`~ncprobe.probes.base.Probe.concept`: its
    own labels, ``model``'s vectors of them for ``lang``, one layer view at a time), e.g.
    ``concept("astitch", "minilm", "en", layers="all")``.

    Raises:
        UsageError: an unknown probe, or one that offers no concept (naming those that do);
            the probe's own (an option, a language or a layer it does not have).
    """
    found = get_probe(probe)
    if not found.offers_concept:
        raise UsageError(f"probe {probe!r} offers no concept (labels an eraser could be "
                         f"fitted on); probes with one: {', '.join(concept_probes()) or 'none'}")
    return found.concept(model, lang, **options)


def target_probes() -> tuple[str, ...]:
    """The names of the probes that can be a target of an intervention on the vectors
    (:attr:`~ncprobe.probes.base.Probe.offers_target`), in :func:`probe_names` order."""
    return tuple(p.name for p in probes() if p.offers_target)


def target(probe: str) -> "Probe":
    """The probe ``probe``, checked to be a target (:meth:`~ncprobe.probes.base.Probe.target_rows`).

    Raises:
        UsageError: an unknown probe, or one that is no target (naming those that are).
    """
    found = get_probe(probe)
    if not found.offers_target:
        raise UsageError(f"probe {probe!r} cannot be a target of amnesic probing (it takes no "
                         f"vector transform); targets: {', '.join(target_probes()) or 'none'}")
    return found


def verifiers() -> list["Probe"]:
    """The probes that check published values
    (:attr:`~ncprobe.probes.base.Probe.checks_published`), in :func:`probe_names` order (a
    plugin that cannot be used left out): what ``ncprobe reproduce --probes`` can select
    beside the study's figures."""
    return [p for p in probes() if p.checks_published]


class _Peers:
    """How a probe reaches the other probes (:attr:`~ncprobe.probes.base.Probe.peers`, set on
    every probe the registry makes): the registry's look-ups, handed to the probe, so that no
    probe's package imports the registry that imports it."""

    def concept(self, probe: str, model: str, lang: str, **options: Any) -> "Concept":
        return concept(probe, model, lang, **options)

    def target(self, probe: str) -> "Probe":
        return target(probe)

    def verifiers(self) -> list["Probe"]:
        return verifiers()


#: The look-ups every probe the registry makes is given (:class:`_Peers`).
PEERS = _Peers()


def describe(table: Mapping[str, "Probe"] | None = None) -> list[str]:
    """One line per probe: its name, what it asks, its data and its result tables, and for a
    plugin the distribution that provides it (what ``ncprobe probes`` prints: the built-in
    probes, then the plugins)."""
    found = table if table is not None else {p.name: p for p in probes()}
    width = max(len(n) for n in found)
    lines = []
    for name, p in found.items():
        dist = provider(name)
        lines.append(f"{name:<{width}}  {p.asks} Data: {p.data}. Tables: "
                     f"{', '.join(p.tables())}."
                     + (f" Plugin: provided by the distribution {dist}." if dist else ""))
    return lines
