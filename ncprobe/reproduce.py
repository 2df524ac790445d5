"""reproduce(models, langs): compute every model x language that can run here, skip the rest.

Which models exist, and whether each can run here, is the registry's knowledge
(:mod:`ncprobe.encoders.registry`); this module only runs them and joins the results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .config import RunConfig, is_lang
from .encoders.registry import MODELS, availability, offline_models, study_models
from .pipeline import compute, run_dir
from .results import Results
from .schema import LANGS


def default_models() -> list[str]:
    """What :func:`reproduce` runs when no model is named: the registry's offline models,
    then the study's (SPEC §5), each in registry order."""
    return list(dict.fromkeys(offline_models() + study_models()))


@dataclass
class Reproduction:
    """What :func:`reproduce` did: the joined results, the runs made, and the runs skipped."""

    results: Results | None
    ran: list[tuple[str, str, str]]       # (model, lang, results directory)
    skipped: list[tuple[str, str, str]]   # (model, lang, why)
    #: what was run otherwise than asked: ``layers`` left out for models without layers
    notes: list[str] = field(default_factory=list)


def reproduce(models: Sequence[str] | None = None, langs: Sequence[str] = ("en", "pt"), *,
              results_dir="results", data_dir=None, cache: bool = True, cache_dir=None,
              progress: bool = True, on_skip=None, overwrite: bool = False,
              **options) -> Reproduction:
    """``compute`` for every model × language that can run here; skip the others with a reason.

    A model is skipped (never silently: ``on_skip(model, lang, why)`` is called and the reason
    kept in :attr:`Reproduction.skipped`) when the registry says it cannot run here
    (:func:`~ncprobe.encoders.registry.availability`): no variant for the language, weights
    that must be downloaded by hand, a missing optional package, no GPU, no API key, or a
    hub model that is neither cached locally nor reachable; or when loading it says so
    (:class:`~ncprobe.errors.ModelUnavailableError`). Any other error stops the run.

    Args:
        models: aliases, ids or paths (default: :func:`default_models`).
        langs: languages.
        results_dir: each run's results go to :func:`run_dir` ``(results_dir, model, lang,
            config)``: ``<results_dir>/<model>-<lang>``, plus the options that differ from
            the defaults.
        overwrite: replace results directories that hold a different run (see
            :meth:`~ncprobe.results.Results.to_parquet`); without it, such a directory stops
            the reproduction before any model runs.
        options: :class:`~ncprobe.config.RunConfig` fields shared by every run (``contexts``,
            ``n_boot``, ``seed``, ``standardise``, ``layers`` ...). ``layers`` applies to the
            models that have layers (transformers, :func:`takes_layers`); the others (static
            vectors, ELMo, API embedders) run without it, and
            :attr:`Reproduction.notes` says so.
    """
    from .errors import ModelUnavailableError
    from .results import check_target

    models = list(models) if models else default_models()
    ran, skipped, parts = [], [], []
    notes = [f"{model} ({lang}): layers={options['layers']!r} does not apply (no layers); run "
             "with its one view" for model in models for lang in langs
             if options.get("layers") is not None and not takes_layers(model, lang)]
    # refuse to replace another run before spending any time computing
    for model in models:
        for lang in langs:
            spec = MODELS.get(model)
            if spec is None or spec.covers(lang):
                cfg = _run_config(model, lang, options)
                check_target(run_dir(results_dir, model, lang, cfg), cfg.to_dict(),
                             overwrite=overwrite)

    def skip(model, lang, why):
        skipped.append((model, lang, why))
        if on_skip is not None:
            on_skip(model, lang, why)

    for model in models:
        for lang in langs:
            why = availability(model, lang, device=options.get("device"))
            if why:
                skip(model, lang, why)
                continue
            try:
                res = compute(_run_config(model, lang, options), data_dir=data_dir,
                              cache=cache, cache_dir=cache_dir, progress=progress)
            except ModelUnavailableError as e:
                skip(model, lang, str(e))
                continue
            out = res.to_parquet(run_dir(results_dir, model, lang,
                                         _run_config(model, lang, options)), overwrite=overwrite)
            ran.append((model, lang, str(out)))
            parts.append(res)
    return Reproduction(Results.concat(parts) if parts else None, ran, skipped, notes)


def takes_layers(model: str, lang: str) -> bool:
    """Whether ``layers`` changes the vectors of ``model`` (its encoder class lists the option:
    transformers), as :func:`~ncprobe.encoders.registry.load_encoder` would decide; nothing is
    loaded. A name that does not resolve counts as taking it (its run says what is wrong)."""
    from .encoders.registry import _resolve
    from .errors import NcprobeError

    try:
        target = _resolve(model, lang, allow_pickle=False, allow_gensim=False)
    except (NcprobeError, ValueError):
        return True
    accepts = getattr(target.cls, "OPTIONS", {})
    return "layers" in accepts and accepts["layers"] is None and "layers" not in target.drop


def _run_config(model: str, lang: str, options: dict) -> RunConfig:
    """The RunConfig of one run; a language the NCIMP data lacks is refused. ``layers`` is
    left out for a model without layers (:func:`takes_layers`)."""
    if not is_lang(lang):
        raise ValueError(f"unknown language {lang!r}; NCIMP has {', '.join(LANGS)}")
    if options.get("layers") is not None and not takes_layers(model, lang):
        options = {k: v for k, v in options.items() if k != "layers"}
    return RunConfig(model=model, lang=lang, **options)
