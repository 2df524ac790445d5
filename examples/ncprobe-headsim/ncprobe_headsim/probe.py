"""The probe declared to ncprobe (the entry point names :class:`HeadSimProbe`) and its run
(:func:`run_headsim`)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ncprobe.probes.base import Probe
from ncprobe.probes.commands import compare_probe_runs
from ncprobe.probes.options import compare_test_options, probe_run_options, run_probe

from .config import HeadSimConfig
from .results import HeadSimResults


def run_headsim(config: HeadSimConfig | None = None, /, *, out: str | Path | None = None,
                overwrite: bool = False, data_dir: Any = None, cache: bool = True,
                cache_dir: Any = None, progress: bool = False, on_step: Any = None,
                **options: Any) -> HeadSimResults:
    """Per NCIMP compound of ``lang``: the cosine of the compound's vector (its words alone,
    as the model encodes them: for word vectors the mean of its words') with its head's and
    with its modifier's; each correlated with the gold score (Spearman, bootstrap interval
    over compounds). Written to ``out`` when given."""
    from ncprobe.cache.shapes import vector_shape
    from ncprobe.cache.store import EmbeddingStore
    from ncprobe.data import Stimulus, load_stimuli
    from ncprobe.embed import embed
    from ncprobe.encoders import load_encoder
    from ncprobe.stats import cosine

    cfg = config if config is not None else HeadSimConfig(**options)
    if on_step is not None:
        on_step(f"headsim: {cfg.model} on the {cfg.lang} compounds")
    encoder = load_encoder(cfg.model, cfg.lang)
    stim = load_stimuli(cfg.lang, contexts="N", probes="original", data_dir=data_dir)
    ncs = [c for c in stim.ncs.values() if c.head and c.modifier]

    def alone(nc: str, words: str) -> Stimulus:  # a text of the words alone, all of it the span
        tokens = tuple(words.split())
        return Stimulus(cfg.lang, nc, "N", "original", 1, tokens, (0, len(tokens)), words)

    items = [alone(c.nc, text) for c in ncs for text in (c.nc, c.head, c.modifier)]
    store = (EmbeddingStore(encoder.fingerprint(), root=cache_dir,
                            shape=vector_shape(encoder)) if cache else None)
    with embed(items, encoder, store=store, progress=progress) as emb:
        vectors = np.asarray(emb.part("span", 0), dtype=np.float64).reshape(len(ncs), 3, -1)
    compounds = pd.DataFrame({
        "model": encoder.name, "lang": cfg.lang, "nc": [c.nc for c in ncs],
        "head": [c.head for c in ncs], "modifier": [c.modifier for c in ncs],
        "gold": [c.gold for c in ncs],
        "cos_head": cosine(vectors[:, 0], vectors[:, 1]),
        "cos_modifier": cosine(vectors[:, 0], vectors[:, 2])})
    meta = {"config": {**asdict(cfg), "model": encoder.name},
            "fingerprint": encoder.fingerprint(), "data_sources": dict(stim.sources),
            "notes": list(stim.notes)}
    res = HeadSimResults(compounds, HeadSimResults.correlate(compounds, cfg.n_boot, cfg.seed),
                         [meta])
    if out is not None:
        res.to_parquet(out, overwrite=overwrite)
    return res


class HeadSimProbe(Probe):
    """Does a compound's vector stay near its head word's as far as it is compositional?"""

    name = "headsim"
    asks = ("Is a compound's vector closer to its head word's (and its modifier's) the more "
            "compositional the compound?")
    data = "NCIMP's compounds, heads, modifiers and gold scores (the ncimp probe's data)"
    help = "an example plugin probe: compound-head cosine against compositionality"
    description = ("Per NCIMP compound, the cosine between the model's vector of the compound "
                   "and of its head word (and modifier), each encoded alone, correlated "
                   "with the gold compositionality score (Spearman, bootstrap interval over "
                   "compounds). Writes a results directory and prints a summary (or --json).")

    def results_class(self) -> type[HeadSimResults]:
        return HeadSimResults

    def config_class(self) -> type:
        return HeadSimConfig

    def run(self, config: Any = None, /, **options: Any) -> HeadSimResults:
        return run_headsim(config, **options)

    def add_run_arguments(self, parser: argparse.ArgumentParser, config: type | None = None
                          ) -> None:
        probe_run_options(parser, config or HeadSimConfig,
                          out_help="results directory (default: results/headsim-MODEL-LANG)",
                          json_help="print the correlations as JSON rows")

    def run_from_args(self, args: argparse.Namespace, config: type | None = None) -> int:
        return run_probe(args, config or HeadSimConfig, run_headsim,
                         lambda cfg: Path("results") / f"headsim-{Path(cfg.model).name}"
                                                       f"-{cfg.lang}")

    def compare_options(self) -> tuple:
        return compare_test_options()  # --n-boot, --seed, --correct

    def compare_from_args(self, args: argparse.Namespace, out: Path | None) -> int:
        return compare_probe_runs(
            args, out, HeadSimResults, what="headsim results",
            within="one run holds one model", title="headsim: rho of two runs, word by word",
            markdown=HeadSimResults.markdown, latex=HeadSimResults.latex,
            config=HeadSimConfig)

    def models_text(self) -> str:
        return ("Any model `ncprobe compute` runs (`ncprobe models` lists them); "
                "glove-6b-50d runs offline.")

    # --- its data: NCIMP's, which the ncimp probe reads and checks ------------------------

    def reads(self, f: Any) -> bool:
        return False

    def data_info(self, root: Path) -> tuple[dict, list[str], list[str]]:
        return {}, [], []

    def data_info_lines(self, info: dict) -> list[str]:
        return []

    def check_data(self, root: Path) -> tuple[list, list[str], list[str]]:
        return [], [], []
