"""reproduce(models, langs): compute every model x language that can run here, skip the rest.

Which models exist, and whether each can run here, is the registry's knowledge
(:mod:`ncprobe.encoders.registry`); this module only runs them and joins the results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .config import RunConfig
from .encoders.registry import hub_unavailable as _hub_unavailable
from .pipeline import compute, run_dir
from .results import Results


#: The models of the study (SPEC §5) and the two that run offline, in the order they are reported.
OFFLINE_MODELS = ("glove-6b-50d", "minilm")
STUDY_MODELS = ("word2vec", "glove", "elmo", "sbert-ml", "bert-large", "bert-ml",
                "distilbert-ml", "llama2", "openai")


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
    kept in :attr:`Reproduction.skipped`) when it has no variant for the language, or when it
    is not available here: weights that must be downloaded by hand, a missing optional
    package, no GPU, no API key, or a hub model that is neither cached locally nor reachable.
    Any other error stops the run.

    Args:
        models: aliases, ids or paths (default: the offline models, then the study's).
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
    from .encoders import MODELS
    from .errors import ModelUnavailableError
    from .results import check_target

    models = list(models) if models else list(OFFLINE_MODELS + STUDY_MODELS)
    ran, skipped, parts = [], [], []
    # refuse to replace another run before spending any time computing
    for model in models:
        for lang in langs:
            spec = MODELS.get(model)
            if spec is None or lang in spec.ids or "*" in spec.ids:
                cfg = RunConfig(model=model, lang=lang, **options)
                check_target(run_dir(results_dir, model, lang, cfg), cfg.to_dict(),
                             overwrite=overwrite)

    def skip(model, lang, why):
        skipped.append((model, lang, why))
        if on_skip is not None:
            on_skip(model, lang, why)

    for model in models:
        for lang in langs:
            spec = MODELS.get(model)
            if spec is not None and lang not in spec.ids and "*" not in spec.ids:
                skip(model, lang, f"no {lang} variant (covers {', '.join(spec.ids)})")
                continue
            why = _hub_unavailable(spec.model_id(lang) if spec else model, spec)
            if why:
                skip(model, lang, why)
                continue
            try:
                res = compute(RunConfig(model=model, lang=lang, **options), data_dir=data_dir,
                              cache=cache, cache_dir=cache_dir, progress=progress)
            except ModelUnavailableError as e:
                skip(model, lang, str(e))
                continue
            out = res.to_parquet(run_dir(results_dir, model, lang, RunConfig(
                model=model, lang=lang, **options)), overwrite=overwrite)
            ran.append((model, lang, str(out)))
            parts.append(res)
    return Reproduction(Results.concat(parts) if parts else None, ran, skipped)
