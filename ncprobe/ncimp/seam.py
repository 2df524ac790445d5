"""NCIMP, the probe of the reference study, behind the probe seam (:mod:`ncprobe.probes`).

The probe's work is done by the modules the data flow names (``docs/architecture.md``):
:mod:`ncprobe.data.ncimp` reads its data, :func:`ncprobe.ncimp.pipeline.compute` runs one model on
one language with the options of :class:`~ncprobe.ncimp.config.RunConfig`,
:class:`~ncprobe.ncimp.results.Results` holds its tables, :mod:`ncprobe.ncimp.report` draws the
study's
figures and tables, :mod:`ncprobe.ncimp.comparison` compares two runs. This module declares them to
the registry; ``ncprobe run ncimp`` is ``ncprobe compute``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..probes.base import Probe

if TYPE_CHECKING:
    import pandas as pd

    from ..concept import Concept, FittedOn
    from ..data.sources import UpstreamFile
    from ..errors import DataError
    from ..headline import Headline
    from ..probes.options import Option
    from ..transform import VectorTransform
    from .results import Results

__all__ = ["NcimpProbe"]


class NcimpProbe(Probe):
    """NCIMP (He et al., Computational Linguistics 2025): noun compounds in minimal pairs."""

    name = "ncimp"
    asks = ("How far does a noun compound's vector move when a word of it is substituted, "
            "and does that follow its compositionality?")
    data = ("NCIMP: NCTTI noun compounds in naturalistic and neutral sentences, English and "
            "Portuguese (+ NCS)")
    shorthand = "compute"
    reads_unnamed_results = True
    offers_concept = True
    offers_target = True
    help = "cosines, measures and correlations for one model and language"
    description = (
        "Encode the NCIMP stimuli with one model, compare every probe with its original, "
        "compute the measures of the study (Sim, Affinity, Scaled Similarity, ratio, rogue "
        "dimensions) and their Spearman correlations with the gold compositionality score, "
        "write the results (parquet + run.json) and print a summary.")

    def commands(self) -> dict:
        from functools import partial

        from .cli import add_reproduce_parser, run_reproduce

        # reproduce also checks the published values of the probes that have them, reached
        # through the registry's look-ups (none for a probe made by hand)
        others = self.peers.verifiers() if self.peers is not None else []
        return {"reproduce": (
            partial(add_reproduce_parser, known=[self.name, *(p.name for p in others)]),
            partial(run_reproduce, probes=others, own=self.name))}

    def results_class(self) -> type["Results"]:
        from .results import Results

        return Results

    def config_class(self) -> type:
        from .config import RunConfig

        return RunConfig

    def run(self, config: Any = None, /, **options: Any) -> "Results":
        from .pipeline import compute

        return compute(config, **options)

    def concept(self, model: str, lang: str, *, layers: str | None = None,
                data_dir: str | Path | None = None, cache: bool = True,
                cache_dir: str | Path | None = None, progress: bool = False,
                **options: Any) -> "Concept":
        """Each compound's compositionality class (:mod:`ncprobe.ncimp.concept`: its
        original naturalistic sentences, groups the compounds, no held-out split)."""
        from .concept import ncimp_concept

        return ncimp_concept(model, lang, layers=layers, data_dir=data_dir, cache=cache,
                             cache_dir=cache_dir, progress=progress, **options)

    def target_rows(self, model: str, lang: str,
                    transforms: "Mapping[str, VectorTransform | None]", *,
                    layers: str | None = None, n_boot: int = 1000, seed: int = 0,
                    correction: str = "holm", compare_n_boot: int,
                    fitted_on: "FittedOn | None" = None,
                    **options: Any) -> "pd.DataFrame":
        """Spearman's rho of every measure, plain, erased and control, and the paired
        changes over compounds (:mod:`ncprobe.ncimp.amnesic`)."""
        from .amnesic import target_rows

        return target_rows(model, lang, transforms, layers=layers, n_boot=n_boot, seed=seed,
                           correction=correction, compare_n_boot=compare_n_boot,
                           fitted_on=fitted_on, **options)

    def add_run_arguments(self, parser: argparse.ArgumentParser, config: type | None = None
                          ) -> None:
        from .cli import add_compute_arguments

        add_compute_arguments(parser, config or self.config_class())

    def run_from_args(self, args: argparse.Namespace, config: type | None = None) -> int:
        from .cli import run_compute

        return run_compute(args, config or self.config_class())

    def report_options(self) -> tuple["Option", ...]:
        from .cli import report_options

        return report_options()

    def compare_options(self) -> tuple["Option", ...]:
        from .cli import compare_options

        return compare_options()

    def report_from_args(self, args: argparse.Namespace, formats: Sequence[str]) -> int:
        from .cli import report_ncimp

        return report_ncimp(args, formats)

    def compare_from_args(self, args: argparse.Namespace, out: Path | None) -> int:
        from .cli import compare_ncimp

        return compare_ncimp(args, out)

    def headline(self, results: "Results") -> "Headline":  # type: ignore[override]
        """NCIMP's headline: Spearman's rho of Sim P_Syn (the compound's similarity to the
        sentence with its synonym substituted, ``syn``) with the gold compositionality score
        over the compounds, in the raw space at the compound (``nc``) level of the
        naturalistic sentences (``nat``), the run's first layer view (its default); each model
        and language a row of the board (``minilm``; another language than English:
        ``minilm (pt)``)."""
        from ..headline import Headline, model_rows
        from ..stats import spearman

        df = results.measures
        df = df[(df["space"].astype(str) == "raw") & (df["level"].astype(str) == "nc")
                & (df["context"].astype(str) == "nat") & (df["measure"].astype(str) == "syn")]
        rows, views = model_rows(df, model="model", lang="lang", view="layers", unit="nc",
                                 columns=["value", "gold"])
        return Headline(self.name, "NCIMP", "rho(Sim P_Syn, Comp)", True, "compounds", rows,
                        lambda d: spearman(d["value"], d["gold"]).rho,
                        {m: f"raw space, level nc, context nat, layer view {v}"
                         for m, v in views.items()})

    def models_text(self) -> str:
        from ..encoders.registry import aligned, models_for, offline_models, study_models
        from ..schema import LANGS

        specs = models_for(self.name)
        langs = list(dict.fromkeys([*LANGS] + [k for s in specs for k in s.ids if k != "*"]))
        rows = [("alias", "family", f"model ({' / '.join(langs)})", "pip install", "needs")]
        for spec in specs:
            ids = " / ".join(dict.fromkeys(spec.ids.get(k, spec.ids.get("*", "-"))
                                           for k in langs))
            rows.append((spec.alias, spec.family, ids, spec.install, spec.requirements))
        return "\n".join([
            aligned(rows),
            f"\nOffline: {', '.join(offline_models())}. The study's models: "
            f"{', '.join(study_models())}.\n`ncprobe reproduce` runs these, the offline ones "
            "first, and says why it skips each one that cannot run here.",
            "\nAlso: any HuggingFace id (org/name), a local model directory, a vector file "
            "(word2vec .bin/.txt, GloVe .txt; gensim .kv with --allow-pickle), or "
            "gensim:<gensim-data name>.\n"
            "gensim:NAME and word2vec (en) load through gensim.downloader, which downloads "
            "and runs Python code\nfrom the gensim-data repository: ncprobe refuses them "
            "unless you pass --allow-gensim-downloader.\n"
            "--layers, --dtype and --device apply to transformer models only (ELMo: "
            "--device); elsewhere they are refused.\n"
            "HuggingFace ids and transformer model directories need ncprobe[hf] (install "
            "torch first: see the README), ELMo directories ncprobe[elmo]."])

    # --- its data ---------------------------------------------------------------------------

    def reads(self, f: "UpstreamFile") -> bool:
        # the NCIMP files are the pins every run needs (required) or may read (optional)
        return f.need in ("required", "optional")

    def data_info(self, root: Path) -> tuple[dict, list[str], list[str]]:
        from ..data.ncimp.check import stimuli_info

        return stimuli_info(root)

    def data_info_lines(self, info: dict) -> list[str]:
        lines = []
        for lang, d in info["languages"].items():
            cls = " / ".join(f"{d['classes'][c]}" for c in ("I", "PC", "C"))
            means = " / ".join("-" if d["class_mean_gold"][c] is None
                               else f"{d['class_mean_gold'][c]:.2f}" for c in ("I", "PC", "C"))
            per = ", ".join(f"{k} {lo}-{hi}" if lo != hi else f"{k} {lo}"
                            for k, (lo, hi) in d["stimuli_per_context"].items())
            lines.append(f"\n{lang.upper()}: {d['ncs']} NCs, {d['scored']} with a gold score"
                         + (f" (unscored: {', '.join(d['unscored'])})" if d["unscored"]
                            else ""))
            lines.append(f"  classes I/PC/C: {cls}; mean gold {means}")
            lines.append(f"  contexts: {d['contexts']['naturalistic']} naturalistic, "
                         f"{d['contexts']['neutral']} neutral; stimuli per context: {per}")
            lines.append(f"  mean naturalistic length: {d['mean_naturalistic_length']} words; "
                         f"{d['stimuli']} stimuli ({d['spliced_stimuli']} spliced)")
        return lines

    def check_data(self, root: Path) -> tuple[list["DataError"], list[str], list[str]]:
        from ..data.ncimp.check import check_ncimp

        return check_ncimp(root)

