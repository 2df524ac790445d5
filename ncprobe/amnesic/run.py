"""Amnesic probing in the stored vectors: erase the concept a probe finds, run the target probes
on what is left, against a control of the same rank.

:func:`run_amnesic` takes the concept's probe (its own labels, through the probe seam:
:func:`ncprobe.probes.concept`), fits the concept's and the control's erasers on its training
rows, view by view (:func:`ncprobe.amnesic.fit.fit_concept`, the guarantee shown), and hands
both to every target probe as vector transforms (:func:`ncprobe.probes.target`:
:meth:`~ncprobe.probes.base.Probe.target_rows`), which runs itself plain, erased and control
and measures the changes over its own unit. No probe is named here.

The rows are the targets' (:data:`ncprobe.intervention.TARGET_COLUMNS`) with the run's
``concept``, ``where`` (``vectors``: the stored vectors, erased as they are read) and
``erase_layer`` (every view erased by its own eraser: ``each``) in front.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import N_BOOT
from ..errors import UsageError
from ..probes.options import COMPARE_N_BOOT
from .fit import FOLDS, fit_concept
from .forward import forward_erasure

if TYPE_CHECKING:
    import pandas as pd

    from ..probes.base import Peers

#: Where the erasers apply: ``vectors``, the stored vectors as they are read; ``forward``, a
#: transformer's hidden state at one layer, the pass continued (:mod:`ncprobe.amnesic.forward`).
WHERE = ("vectors", "forward")


def forward_layers(erase_layer: int, n_layers: int) -> str:
    """The views measured by default in the forward mode: each layer from the erased one to
    the last (``"3,4,5,6"``): the erased layer's own view (the erasure itself) and every later
    one (the model's answer to it). Those before it are the plain pass's, unchanged by
    construction: measured, they would only widen the family of tests."""
    return ",".join(str(i) for i in range(erase_layer, n_layers + 1))
#: The columns the run puts before the targets' own.
RUN_COLUMNS = ("concept", "where", "erase_layer")


@dataclass
class AmnesicRun:
    """What :func:`run_amnesic` measured.

    Attributes:
        rows: the targets' rows (conditions and changes) with :data:`RUN_COLUMNS` in front.
        guarantee: the concept's own linear probe before and after erasure, on training and
            held-out rows (:attr:`ncprobe.amnesic.fit.FittedConcept.guarantee`).
        meta: what the run was (model, language, concept, targets, options, fingerprints).
        notes: what was noticed (the concept's rows left out, its loader's warnings).
    """

    rows: pd.DataFrame
    guarantee: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def json_rows(self) -> list[dict]:
        """The rows and the guarantee rows (``target: concept``), JSON-ready."""
        return json_rows(self.rows, self.guarantee)


def json_rows(changes: pd.DataFrame, guarantee: pd.DataFrame) -> list[dict]:
    """A run's target rows, then its guarantee rows (``target: concept``), JSON-ready (NaN as
    ``None``, numpy values as Python's): what ``--json`` prints."""
    import math

    def clean(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return None
        return v.item() if hasattr(v, "item") else v

    out = [{k: clean(v) for k, v in r.items()} for r in changes.to_dict("records")]
    out += [{"target": "concept", **{k: clean(v) for k, v in r.items()}}
            for r in guarantee.to_dict("records")]
    return out

def run_amnesic(model: str, *, peers: Peers, concept: str, targets: Sequence[str],
                lang: str = "en",
                where: str = "vectors", erase_layer: int | None = None,
                positions: str | None = None, layers: str | None = None, folds: int = FOLDS,
                n_boot: int = N_BOOT, seed: int = 0, correction: str = "holm",
                compare_n_boot: int | None = None,
                concept_options: Mapping[str, Any] | None = None,
                target_options: Mapping[str, Mapping[str, Any]] | None = None,
                data_dir: Any = None, cache: bool = True, cache_dir: Any = None,
                progress: bool = False, on_step: Callable[[str], None] | None = None
                ) -> AmnesicRun:
    """Erase ``concept`` (a probe that offers one) from ``model``'s vectors and measure what
    it does to each of ``targets`` against a control of the same rank (the module says how).

    Args:
        peers: how the probes are reached (:attr:`ncprobe.probes.base.Probe.peers`; from
            Python, :data:`ncprobe.probes.PEERS`).
        concept: the probe whose labels are the concept (``astitch``, ``ncimp``).
        targets: the probes measured (``ncimp``, ``astitch``), each once.
        where: ``vectors`` (the stored vectors as they are read, each view by its own
            eraser) or ``forward`` (the hidden state of ``erase_layer`` erased in the
            forward pass, the pass continued).
        erase_layer: the layer erased in the forward pass (``0``: the embeddings' output);
            only with ``where="forward"``, and there required.
        positions: where in the sentence the forward pass is erased: ``span`` (the
            expression's tokens, the default) or ``all``; only with ``where="forward"``.
        layers: the transformer layer views, the same for the concept and every target
            (forward: the targets' views, default :func:`forward_layers`: the erased layer
            and every later one; the concept is read at the erased layer's own view).
        folds: the folds by group of a concept without held-out rows.
        n_boot, seed, correction: the runs' intervals, every resample's seed, the
            correction.
        compare_n_boot: the resamples of the changes' paired intervals and tests (``None``:
            as ``ncprobe compare``, :data:`ncprobe.probes.options.COMPARE_N_BOOT`), resolved
            here once and handed to every target as a number.
        concept_options: the concept probe's own options (its ``concept`` documents them).
        target_options: per target, its run options (e.g. ``{"astitch": {"within_draws":
            5}}``).
        data_dir, cache, cache_dir, progress: as for every probe.
        on_step: told of each step, in words.

    Raises:
        UsageError: an unknown probe, a concept probe without a concept, a target that takes
            no transform, a target given twice, another ``where``, options for a probe that
            is not a target; the probes' own (a layer the model lacks, a language).
    """
    import pandas as pd

    if where not in WHERE:
        raise UsageError(f"where={where!r} (--where): the erasers apply in {', '.join(WHERE)}")
    if where == "vectors":
        given = [f"{k}={v!r}" for k, v in (("erase_layer", erase_layer),
                                             ("positions", positions)) if v is not None]
        if given:
            raise UsageError(f"{', '.join(given)} has no effect with where='vectors' (every "
                             "view is erased by its own eraser as it is read): give "
                             "where='forward' (--where forward) to erase inside the pass")
    else:
        positions = positions or "span"
        n_layers = check_forward(model, lang, erase_layer, positions)
    names = list(targets)
    if not names:
        raise UsageError("give at least one target probe (targets=...)")
    twice = sorted({t for t in names if names.count(t) > 1})
    if twice:
        raise UsageError(f"target(s) {', '.join(twice)} given twice: each target once")
    probes = {t: peers.target(t) for t in names}  # every target checked before any work
    stray = sorted(set(target_options or {}) - set(names))
    if stray:
        raise UsageError(f"options for {', '.join(stray)}, which is no target of this run "
                         f"(targets: {', '.join(names)})")
    for t, probe in probes.items():  # what a target refuses, before any work
        probe.check_target(lang, **dict((target_options or {}).get(t, {})))
    say = on_step or (lambda _: None)
    resamples = COMPARE_N_BOOT if compare_n_boot is None else compare_n_boot
    run = {"data_dir": data_dir, "cache": cache, "cache_dir": cache_dir, "progress": progress}
    say(f"concept {concept}: {model}'s vectors of its rows ({lang})")
    at = layers if where == "vectors" else str(erase_layer)  # forward: the erased layer's view
    with peers.concept(concept, model, lang, layers=at, **run,
                     **dict(concept_options or {})) as found:
        if where == "forward" and found.held is None:
            raise UsageError(f"concept {found.name}: without held-out rows its erasers are "
                             "fitted per fold of groups (no expression erased by an eraser "
                             "fitted on itself), and a forward pass is shared by every "
                             "stimulus of a sentence whatever its group: erase in the forward "
                             "pass with a concept that has held-out rows (--concept astitch), "
                             "or erase the stored vectors (--where vectors)")
        fitted = fit_concept(found, folds=folds, seed=seed, on_view=lambda v, lv, i, n: say(
            f"fitting the erasers of view {v}, level {lv} ({i + 1}/{n})"))
        name, notes, concept_meta = found.name, list(found.notes), dict(found.meta)
        fitted_on = found.fitted_on
    transforms: dict[str, Any] = {"plain": None, "erased": fitted.erased,
                                  "control": fitted.control}
    if where == "forward":
        assert erase_layer is not None and positions is not None
        transforms = {"plain": None, **{c: forward_erasure(
            t.erasers, erase_layer, positions, t.what) for c, t in transforms.items() if t}}
        layers = layers or forward_layers(erase_layer, n_layers)
    parts = []
    for t, probe in probes.items():
        say(f"target {t}: plain, erased and control runs")
        rows = probe.target_rows(model, lang, transforms, layers=layers, n_boot=n_boot,
                                 seed=seed, correction=correction,
                                 compare_n_boot=resamples, fitted_on=fitted_on, **run,
                                 **dict((target_options or {}).get(t, {})))
        parts.append(rows)
    rows = pd.concat(parts, ignore_index=True)
    erased_at = "each" if where == "vectors" else str(erase_layer)
    for i, (col, value) in enumerate(zip(RUN_COLUMNS, (name, where, erased_at), strict=True)):
        rows.insert(i, col, value)
    meta = {"model": model, "lang": lang, "concept": name, "concept_probe": concept,
            "targets": names, "where": where, "layers": layers, "folds": folds,
            **({} if where == "vectors" else {"erase_layer": erase_layer,
                                               "positions": positions}),
            "n_boot": n_boot, "compare_n_boot": resamples, "seed": seed,
            "correction": correction,
            "erased": transforms["erased"].fingerprint,
            "control": transforms["control"].fingerprint,
            "concept_meta": concept_meta}
    return AmnesicRun(rows, fitted.guarantee, meta, [*notes, *fitted.notes])


def check_forward(model: str, lang: str, erase_layer: int | None, positions: str) -> int:
    """The model's number of layers, once a forward-mode run is checked before any work: no
    ``erase_layer``, unknown positions, a model without a forward pass to erase in (static
    vectors, ELMo, an API model), a layer the model does not have are refused.

    Raises:
        UsageError: naming the option and what to give.
    """
    from ..encoders import load_encoder
    from ..encoders.registry import resolve_target
    from .forward import level_of

    if erase_layer is None:
        raise UsageError("where='forward' needs the layer to erase (--erase-layer L; 0: the "
                         "embeddings' output)")
    level_of(positions)
    target = resolve_target(model, lang, allow_pickle=False, allow_gensim=False)
    if not hasattr(target.cls, "with_intervention"):
        raise UsageError(f"--where forward: {model} has no forward pass to erase in (static "
                         "vectors, ELMo or an API model): give a transformer model, or erase "
                         "its stored vectors (--where vectors)")
    # a transformer's reads its config only; every view: valid for a model of any depth (the
    # default, the last four, is not for a model of fewer layers)
    n = int(load_encoder(model, lang, layers="all").n_layers)
    if not 0 <= erase_layer <= n:
        raise UsageError(f"--erase-layer {erase_layer}: {model} has layers 0 (the embeddings) "
                         f".. {n}; give one of them")
    return n
