"""``ncprobe run amnesic``: an :class:`~ncprobe.amnesic.config.AmnesicConfig` run
(:func:`ncprobe.amnesic.run.run_amnesic`) into a results directory."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..config import config_of, takes_config
from .config import AmnesicConfig
from .results import AmnesicResults

if TYPE_CHECKING:
    from ..probes.base import Peers


@takes_config(AmnesicConfig)
def run_amnesic_probe(config: AmnesicConfig | None = None, /, *, peers: Peers,
                      out: str | Path | None = None,
                      overwrite: bool = False, data_dir: Any = None, cache: bool = True,
                      cache_dir: Any = None, progress: bool = False,
                      on_step: Callable[[str], None] | None = None,
                      **options: Any) -> AmnesicResults:
    """Erase the concept of ``config.concept`` from ``config.model``'s vectors, measure every
    target plain, erased and control (:func:`ncprobe.amnesic.run.run_amnesic`), and write the
    results directory ``out`` (refused before any work where it must not be written).
    ``peers``: how the other probes are reached (:attr:`ncprobe.probes.base.Probe.peers`).

    Raises:
        UsageError: a bad option, a probe without a concept, a target that takes no transform
            (exit 2); the probes' own errors.
    """
    from ..results.store import check_target, check_writable
    from .run import run_amnesic

    cfg = config_of(AmnesicConfig, config, options, caller="run_amnesic_probe")
    record = {**asdict(cfg), "targets": list(cfg.targets)}
    if out is not None:
        check_target(out, [{"config": record}], layout=AmnesicResults.layout,
                     overwrite=overwrite)
        check_writable(out)
    amnesic = {"accept_modified_data": cfg.accept_modified_data}
    run = run_amnesic(cfg.model, peers=peers, concept=cfg.concept, targets=cfg.targets,
                      lang=cfg.lang, where=cfg.where, erase_layer=cfg.erase_layer,
                      positions=cfg.positions, layers=cfg.layers, folds=cfg.folds,
                      n_boot=cfg.n_boot, seed=cfg.seed, correction=cfg.correction,
                      compare_n_boot=cfg.compare_n_boot, concept_options=amnesic,
                      target_options={t: amnesic for t in cfg.targets}, data_dir=data_dir,
                      cache=cache, cache_dir=cache_dir, progress=progress, on_step=on_step)
    both = {"model": cfg.model, "lang": cfg.lang}
    changes = run.rows.assign(**both)[list(AmnesicResults.layout.columns["changes"])]
    guarantee = run.guarantee.assign(**both)[list(AmnesicResults.layout.columns["guarantee"])]
    meta = {"config": record, "concept": run.meta["concept"], "notes": run.notes,
            **{k: v for k, v in run.meta.items() if k in ("erased", "control",
                                                          "concept_meta")}}
    res = AmnesicResults(changes, guarantee, [meta])
    if out is not None:
        res.to_parquet(out, overwrite=overwrite)
    return res
