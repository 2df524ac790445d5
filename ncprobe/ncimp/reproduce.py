"""reproduce(models, langs): compute every model x language that can run here, skip the rest.

Which models exist, and whether each can run here, is the registry's knowledge
(:mod:`ncprobe.encoders.registry`); where each run computes (here, one after the other, or as
job arrays on a SLURM cluster) is the executor's (:mod:`ncprobe.executors`). This module only
plans the runs, keeps the finished ones when resuming, and joins the results in the order the
models and languages were given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence, cast

from ..encoders.registry import availability, offline_models, study_models
from ..errors import UsageError
from ..executors import Executor, Task
from ..schema import LANGS
from .config import RunConfig, is_lang
from .pipeline import compute, run_dir
from .results import Results


def default_models() -> list[str]:
    """What :func:`reproduce` runs when no model is named: the registry's offline models,
    then the study's (method §5), each in registry order."""
    return list(dict.fromkeys(offline_models() + study_models()))


@dataclass
class Reproduction:
    """What :func:`reproduce` did: the joined results, the runs made, and the runs skipped."""

    results: Results | None
    #: (model, lang, results directory) of every run in :attr:`results`, in the order given,
    #: those kept from an earlier reproduction (:attr:`resumed`) included
    ran: list[tuple[str, str, str]]
    skipped: list[tuple[str, str, str]]   # (model, lang, why)
    #: what was run otherwise than asked: ``layers`` left out for models without layers,
    #: ``device`` for models that run on no device (or only on another)
    notes: list[str] = field(default_factory=list)
    #: (model, lang, why, log file or None) of the runs that failed on the executor (raised,
    #: killed, timed out); their results are not in :attr:`results`, and running the same
    #: reproduction again computes them
    failed: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    #: (model, lang, results directory) of the runs of :attr:`ran` found finished (a results
    #: directory of the same run) and not computed again
    resumed: list[tuple[str, str, str]] = field(default_factory=list)


def reproduce(models: Sequence[str] | None = None, langs: Sequence[str] = ("en", "pt"), *,
              results_dir="results", data_dir=None, cache: bool = True, cache_dir=None,
              progress: bool = True, on_skip=None, overwrite: bool = False,
              executor: str | Executor = "local",
              executor_options: Mapping[str, Any] | None = None,
              resume: bool | None = None, **options) -> Reproduction:
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
            :meth:`~ncprobe.ncimp.results.Results.to_parquet`); without it, such a directory stops
            the reproduction before any model runs.
        options: :class:`~ncprobe.ncimp.config.RunConfig` fields shared by every run (``contexts``,
            ``n_boot``, ``seed``, ``standardise``, ``layers``, ``device`` ...). ``layers``
            applies to the models that have layers (transformers, :func:`takes_layers`), and
            ``device`` to those that run on one (transformers and ELMo; static vectors to
            ``cpu`` only; :func:`takes_option`); the others run without it, and
            :attr:`Reproduction.notes` says so. The availability of a model that needs a GPU
            takes the ``device`` given: ``device="cpu"`` runs it on the CPU.
        executor: where the runs compute (:mod:`ncprobe.executors`): ``local`` (here, one
            after the other, as always), ``slurm`` (job arrays on a SLURM cluster: each run
            one array task, with the resources the registry gives its model), or an
            executor object. Whatever the executor, the results are joined in the order of
            ``models`` and ``langs``, and a run that fails on it (raised, was killed, timed
            out) is listed in :attr:`Reproduction.failed` with its log while the others are
            kept; the local executor lets an error propagate, as before.
        executor_options: the named executor's options (``slurm``: ``partition``, ``gpus``,
            ``mem``, ``time``, ``sbatch``, ``wait``; see
            :class:`~ncprobe.executors.slurm.SlurmExecutor`).
        resume: keep the runs already finished, a results directory holding the same run
            (the same config, read and verified, made from data files with the same
            content), instead of computing them again; they are listed in
            :attr:`Reproduction.resumed`. ``None``: the executor's default (``local``: no,
            ``slurm``: yes). A model whose weights changed under the same name is not
            noticed: pass ``resume=False`` then.
    """
    from .._io import cache_root
    from ..executors import Outcome, make_executor
    from ..results.store import check_target, check_writable
    from .results import NCIMP_LAYOUT

    models = list(models) if models else default_models()
    for what, given in (("model", models), ("language", list(langs))):
        twice = sorted({m for m in given if given.count(m) > 1})
        if twice:  # two runs of one model and language would be one cell twice
            raise UsageError(f"{what} {', '.join(map(repr, twice))} given twice; name each "
                             f"{what} once")
    unknown = [lang for lang in langs if not is_lang(lang)]
    if unknown:
        raise UsageError(f"unknown language(s) {', '.join(map(repr, unknown))}; NCIMP has "
                         f"{', '.join(LANGS)}")
    ran, skipped, parts = [], [], []
    notes = []
    for model in models:
        for lang in langs:
            if options.get("layers") is not None and not takes_layers(model, lang):
                notes.append(f"{model} ({lang}): layers={options['layers']!r} does not apply "
                             "(no layers); run with its one view")
            if options.get("device") is not None and not takes_option(
                    model, lang, "device", options["device"]):
                notes.append(f"{model} ({lang}): device={options['device']!r} does not apply "
                             "(it runs on no device, or only on another); run without it")
            if options.get("batch_tokens") is not None and not takes_option(
                    model, lang, "batch_tokens", options["batch_tokens"]):
                notes.append(f"{model} ({lang}): batch_tokens={options['batch_tokens']!r} does "
                             "not apply (no sub-word tokens: batches of a count); run without "
                             "it")
    runner = make_executor(executor, executor_options)
    # why each model x language cannot run here (None: it runs), asked once
    unavailable: dict[tuple[str, str], str | None] = {}
    for model in models:
        for lang in langs:
            device = options.get("device")
            if device is not None and not takes_option(model, lang, "device", device):
                device = None  # not passed to this model (a note says so)
            unavailable[(model, lang)] = availability(
                model, lang, device=runner.assumed_device(model, lang, device))
    # refuse to replace another run before spending any time computing; a run that is
    # skipped writes nothing, so what its directory holds is no reason to stop
    for (model, lang), why in unavailable.items():
        if why is None:
            cfg = _run_config(model, lang, options)
            out = run_dir(results_dir, model, lang, cfg)
            check_target(out, cfg.to_dict(), layout=NCIMP_LAYOUT, overwrite=overwrite,
                         option="--results-dir")
            check_writable(out)  # a read-only or unwritable results_dir: exit 6 now

    keep = runner.resume_default if resume is None else resume
    runner.prepare(results_dir=Path(results_dir),
                   cache_dir=cache_root(cache_dir) if cache else None)
    order: dict[tuple[str, str], int] = {}
    outcomes: dict[int, Outcome] = {}
    skips: list[tuple[int, tuple[str, str, str]]] = []

    def skip(model, lang, why):
        skipped.append((model, lang, why))
        skips.append((order[(model, lang)], (model, lang, why)))
        if on_skip is not None:
            on_skip(model, lang, why)

    def done(outcome: Outcome) -> None:
        task = outcome.task
        outcomes[task.index] = outcome
        if outcome.status == "unavailable":
            skip(task.model, task.lang, outcome.why)

    for model in models:
        for lang in langs:
            index = order[(model, lang)] = len(order)
            why = unavailable[(model, lang)]
            if why:
                skip(model, lang, why)
                continue
            cfg = _run_config(model, lang, options)
            task = Task(index, model, lang, cfg, str(run_dir(results_dir, model, lang, cfg)),
                        data_dir=data_dir, cache=cache, cache_dir=cache_dir,
                        overwrite=overwrite, progress=progress, compute=_compute)
            found = _finished(task) if keep else None
            if found is not None:
                outcomes[index] = Outcome(task, "resumed", path=str(Path(task.out).resolve()),
                                          results=found)
                continue
            runner.submit(task, done)
    runner.wait(done)

    failed, resumed = [], []
    for index in sorted(outcomes):
        outcome = outcomes[index]
        task = outcome.task
        if outcome.status in ("ran", "resumed"):
            assert outcome.path is not None
            ran.append((task.model, task.lang, outcome.path))
            # a task of this reproduction computes NCIMP's Results (_compute)
            parts.append(cast(Results, outcome.results) if outcome.results is not None
                         else Results.load(outcome.path))
            if outcome.status == "resumed":
                resumed.append((task.model, task.lang, outcome.path))
        elif outcome.status == "failed":
            failed.append((task.model, task.lang, outcome.why, outcome.log))
    # the skips in the order of the runs, wherever the executor learnt them
    skipped[:] = [entry for _, entry in sorted(skips, key=lambda s: s[0])]
    return Reproduction(Results.concat(parts) if parts else None, ran, skipped, notes,
                        failed, resumed)


def _compute(config: RunConfig, **kwargs) -> Results:
    """:func:`~ncprobe.ncimp.pipeline.compute`, looked up when called (a task names this function,
    which travels to a cluster node by reference)."""
    return compute(config, **kwargs)


def _finished(task: Task) -> Results | None:
    """The results of ``task`` when its results directory holds that run, finished: the
    same config (what :func:`~ncprobe.results.store.check_target` compares before computing), its
    tables as written (verified while read), and every data file it was made from unchanged
    (the same git blob id); else None (it is computed again)."""
    from ..data.sources import sources_unchanged
    from ..errors import NcprobeError
    from ..results.store import inspect_dir, run_identity
    from .results import NCIMP_LAYOUT

    kind, _, runs = inspect_dir(task.out)
    if kind != "results" or len(runs) != 1:
        return None
    if (run_identity(runs, NCIMP_LAYOUT)[0]["config"]
            != run_identity(task.config.to_dict(), NCIMP_LAYOUT)[0]["config"]):
        return None
    if not sources_unchanged(runs[0].get("data_sources"), task.data_dir):
        return None
    try:
        return Results.load(task.out)
    except (NcprobeError, OSError):
        return None


def takes_layers(model: str, lang: str) -> bool:
    """Whether ``layers`` changes the vectors of ``model`` (its encoder class lists the option:
    transformers), as :func:`~ncprobe.encoders.registry.load_encoder` would decide; nothing is
    loaded. A name that does not resolve counts as taking it (its run says what is wrong)."""
    return takes_option(model, lang, "layers", None)


def takes_option(model: str, lang: str, option: str, value: object) -> bool:
    """Whether ``option`` (``layers``, ``device``) with ``value`` applies to ``model`` in
    ``lang``, as :func:`~ncprobe.encoders.registry.check_options` would decide: its encoder
    class lists the option for any value, or for this one (static vectors: ``device`` ``cpu``
    only). ``value`` ``None``: whether it takes any value. Nothing is loaded; a name that does
    not resolve counts as taking it (its run says what is wrong)."""
    from ..encoders.registry import accepted_options, resolve_target
    from ..errors import NcprobeError

    try:
        target = resolve_target(model, lang, allow_pickle=False, allow_gensim=False)
    except (NcprobeError, ValueError):
        return True
    accepts = accepted_options(target.cls)
    if option not in accepts or option in target.drop:
        return False
    allowed = accepts[option]
    return allowed is None or (value is not None and str(value).lower() in allowed)


def _run_config(model: str, lang: str, options: dict) -> RunConfig:
    """The RunConfig of one run (a language of the NCIMP data: :func:`reproduce` refuses the
    others first). ``layers`` is left out for a model without layers (:func:`takes_layers`),
    ``device`` and ``batch_tokens`` for one they do not apply to (:func:`takes_option`)."""
    assert is_lang(lang), lang
    if options.get("layers") is not None and not takes_layers(model, lang):
        options = {k: v for k, v in options.items() if k != "layers"}
    for option in ("device", "batch_tokens"):
        if options.get(option) is not None and not takes_option(model, lang, option,
                                                                options[option]):
            options = {k: v for k, v in options.items() if k != option}
    return RunConfig(model=model, lang=lang, **options)
