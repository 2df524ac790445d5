"""reproduce(models, langs): compute every model x language that can run here, skip the rest.

Which models exist, and whether each can run here, is the registry's knowledge
(:mod:`ncprobe.encoders.registry`); this module only runs them and joins the results.
"""

from __future__ import annotations

from dataclasses import dataclass
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
            ``n_boot``, ``seed`` ...).
    """
    from .errors import ModelUnavailableError
    from .results import check_target

    models = list(models) if models else default_models()
    ran, skipped, parts = [], [], []
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
    return Reproduction(Results.concat(parts) if parts else None, ran, skipped)


def _run_config(model: str, lang: str, options: dict) -> RunConfig:
    """The RunConfig of one run; a language the NCIMP data lacks is refused."""
    if not is_lang(lang):
        raise ValueError(f"unknown language {lang!r}; NCIMP has {', '.join(LANGS)}")
    return RunConfig(model=model, lang=lang, **options)
