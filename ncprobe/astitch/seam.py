"""AStitch Task 1 A, the fourth probe, behind the probe seam (:mod:`ncprobe.probes`).

The probe's work is done by this package (:mod:`ncprobe.astitch`) and its data module
(:mod:`ncprobe.data.astitch`); this module declares them to the registry.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import DataError, DataErrors
from ..probes.base import Probe

if TYPE_CHECKING:
    import pandas as pd

    from ..concept import Concept, FittedOn
    from ..data.sources import UpstreamFile
    from ..headline import Headline
    from ..probes.options import Option
    from ..transform import VectorTransform
    from .results import AStitchResults

__all__ = ["AStitchProbe"]

#: Where the probe's pinned files live in the data directory.
_DATA_PREFIX = "H-TayyarMadabushi+AStitchInLanguageModels/Dataset/"


class AStitchProbe(Probe):
    """AStitchInLanguageModels Task 1 A (Tayyar Madabushi et al., 2021): is the expression used
    idiomatically in this sentence?"""

    name = "astitch"
    asks = ("Is the expression used idiomatically in this sentence? Token-level, from a "
            "model's frozen vectors layer by layer: paraphrase AUROC and a linear probe with "
            "controls.")
    data = ("AStitchInLanguageModels Task 1 A: about 6,500 English and Portuguese uses of "
            "noun compounds labelled idiomatic or not, with paraphrases (GPL-3.0)")
    offers_concept = True
    offers_target = True
    help = "AStitch: token-level idiomaticity, paraphrase and linear probes with controls"
    description = (
        "For each labelled use of an expression in AStitch Task 1 A (English, Portuguese): "
        "the paraphrase probe (no training: the literal paraphrase's cosine less the best "
        "non-literal one's, at NC and sentence level, with and without the context; AUROC per "
        "split with 95% intervals over expressions) and the linear probe (an L2 logistic "
        "regression per layer view, regularisation chosen on dev, macro-F1 and accuracy on "
        "test per setting, with the majority, expression-only, static and control-task "
        "controls and selectivity; paired tests between views and models, corrected). "
        "Writes a results directory and prints a summary (or --json rows).")

    def results_class(self) -> type["AStitchResults"]:
        from .results import AStitchResults

        return AStitchResults

    def config_class(self) -> type:
        from .config import AStitchConfig

        return AStitchConfig

    def run(self, config: Any = None, /, **options: Any) -> "AStitchResults":
        from .probe import run_astitch

        return run_astitch(config, **options)

    def concept(self, model: str, lang: str, *, layers: str | None = None,
                data_dir: str | Path | None = None, cache: bool = True,
                cache_dir: str | Path | None = None, progress: bool = False,
                **options: Any) -> "Concept":
        """Each use's idiomatic or literal label (:mod:`ncprobe.astitch.concept`: the
        few-shot training split by default, dev held out, groups the expressions)."""
        from .concept import astitch_concept

        return astitch_concept(model, lang, layers=layers, data_dir=data_dir, cache=cache,
                               cache_dir=cache_dir, progress=progress, **options)

    def target_rows(self, model: str, lang: str,
                    transforms: "Mapping[str, VectorTransform | None]", *,
                    layers: str | None = None, n_boot: int = 1000, seed: int = 0,
                    correction: str = "holm", compare_n_boot: int,
                    fitted_on: "FittedOn | None" = None,
                    **options: Any) -> "pd.DataFrame":
        """The paraphrase AUROC and the linear macro-F1, plain, erased and control, and
        the paired changes over expressions (:mod:`ncprobe.astitch.amnesic`)."""
        from .amnesic import target_rows

        return target_rows(model, lang, transforms, layers=layers, n_boot=n_boot, seed=seed,
                           correction=correction, compare_n_boot=compare_n_boot,
                           fitted_on=fitted_on, **options)

    def add_run_arguments(self, parser: argparse.ArgumentParser, config: type | None = None
                          ) -> None:
        from .cli import add_astitch_arguments

        add_astitch_arguments(parser, config or self.config_class())

    def run_from_args(self, args: argparse.Namespace, config: type | None = None) -> int:
        from .cli import run_astitch_from_args

        return run_astitch_from_args(args, config or self.config_class())

    def compare_options(self) -> tuple["Option", ...]:
        from ..probes.options import compare_test_options

        return compare_test_options()

    def compare_from_args(self, args: argparse.Namespace, out: Path | None) -> int:
        from .cli import compare_astitch

        return compare_astitch(args, out)

    def headline(self, results: "AStitchResults") -> "Headline":  # type: ignore[override]
        """AStitch's headline: the linear probe's test macro-F1, zero-shot, on the
        expression's span (level ``nc``) with its context excluded, the run's first layer
        view (its default), every test use; resampled by expression (a cluster bootstrap, as
        the probe's own intervals). Each model and language a row of the board (``minilm``;
        Portuguese: ``minilm (pt)``)."""
        from ..headline import Headline, model_rows
        from .stats import macro_f1

        df = results.predictions
        df = df[(df["probe_kind"].astype(str) == "linear") & (df["control"].astype(str) == "")
                & (df["setting"].astype(str) == "zero-shot") & (df["level"].astype(str) == "nc")
                & (df["context"].astype(str) == "excluded")]
        rows, views = model_rows(df, model="model", lang="lang", view="layer",
                                 unit="expression", columns=["label", "predicted"])
        return Headline(self.name, "AStitch", "macro-F1", True, "expressions", rows,
                        lambda d: macro_f1(d["label"].to_numpy(), d["predicted"].to_numpy()),
                        {m: "linear probe, zero-shot, level nc, context excluded, layer view "
                            f"{v}" for m, v in views.items()})

    def models_text(self) -> str:
        return ("Any model `ncprobe compute` runs is probed (`ncprobe models` lists the "
                "aliases); an alias without a model for the language probes its one model.\n"
                "The static control (--static; auto: glove-6b-50d unless it is probed) is any "
                "static vector model.")

    # --- its data ---------------------------------------------------------------------------

    def reads(self, f: "UpstreamFile") -> bool:
        return f.local_path.startswith(_DATA_PREFIX) and f.local_path.endswith(".csv")

    def data_info(self, root: Path) -> tuple[dict, list[str], list[str]]:
        from ..data.astitch import astitch_counts

        counts, notes, errors = astitch_counts(root)
        return {"astitch": counts}, notes, errors

    def data_info_lines(self, info: dict) -> list[str]:
        from ..data.astitch import counts_lines

        return counts_lines(info.get("astitch") or {})

    def check_data(self, root: Path) -> tuple[list[DataError], list[str], list[str]]:
        from ..data.astitch import load_astitch
        from . import LANGS

        errors: list[DataError] = []
        notes: list[str] = []
        for lang in LANGS:
            try:
                data = load_astitch(lang, root, accept_modified=True, collect=True)
            except DataErrors as e:
                errors += list(e.errors)
                continue
            except DataError as e:
                errors.append(e)
                continue
            notes += list(data.notes)
        return errors, notes, []
