"""SemanticQA's NCC task, the third probe, behind the probe seam (:mod:`ncprobe.probes`).

The probe's work is done by this package (:mod:`ncprobe.ncc`) and its data module
(:mod:`ncprobe.data.semanticqa`); this module declares them to the registry.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..errors import DataError, DataErrors
from ..probes.base import Probe

if TYPE_CHECKING:
    import pandas as pd

    from ..concept import FittedOn
    from ..data.sources import UpstreamFile
    from ..headline import Headline
    from ..probes.options import Option
    from ..transform import VectorTransform
    from ..verify import Measured, Published
    from .results import NccResults

__all__ = ["NccProbe"]

#: Where the probe's pinned files live in the data directory.
_DATA_PREFIX = "jacklanda+SemanticQA/"


class NccProbe(Probe):
    """SemanticQA NCC (Liu et al., ACL 2026): how compositional is the compound here?"""

    name = "ncc"
    uses = ("ncimp",)  # NCIMP's measures of a compound
    asks = ("Does what a model's representation encodes tell a compound's compositionality "
            "class in its sentence as well as what language models answer, item by item?")
    @property
    def data(self) -> str:  # type: ignore[override]  # counted from the pins, never written
        """What the probe reads, its systems and files counted from the pinned files."""
        from ..data.semanticqa import pinned_systems, prediction_files

        return (f"SemanticQA NCC: 241 English NCIMP compounds in sentences, "
                f"{len(pinned_systems())} systems' predictions in {len(prediction_files())} "
                "files (MIT)")

    help = "SemanticQA NCC: a representation's classes beside the published systems' answers"
    description = (
        "Classify the 241 items of SemanticQA's noun-compound compositionality task (NC, PC, "
        "C) from a model's NCIMP measures on each item's sentence (one measure by two cut "
        "points, all measures by logistic regression; cross-validated), from the gold score "
        "(the ceiling) and, with --behaviour, by the model's own answer; score the published "
        "systems' prediction files; compare every classifier with every system on the same "
        "items (paired bootstrap, exact McNemar, corrected). Writes a results directory and "
        "prints a summary (or --json rows).")

    def results_class(self) -> type["NccResults"]:
        from .results import NccResults

        return NccResults

    def config_class(self) -> type:
        from .config import NccConfig

        return NccConfig

    def run(self, config: Any = None, /, **options: Any) -> "NccResults":
        from .probe import run_ncc

        return run_ncc(config, **options)

    offers_target = True

    def target_rows(self, model: str, lang: str,
                    transforms: "Mapping[str, VectorTransform | None]", *,
                    layers: str | None = None, n_boot: int = 1000, seed: int = 0,
                    correction: str = "holm", compare_n_boot: int,
                    fitted_on: "FittedOn | None" = None,
                    **options: Any) -> "pd.DataFrame":
        """The accuracy of every classifier of the representation, plain, erased and
        control, and the paired changes over items (:mod:`ncprobe.ncc.amnesic`)."""
        from .amnesic import target_rows

        return target_rows(model, lang, transforms, layers=layers, n_boot=n_boot, seed=seed,
                           correction=correction, compare_n_boot=compare_n_boot,
                           fitted_on=fitted_on, **options)

    def check_target(self, lang: str, **options: Any) -> None:
        """English only; no ``behaviour``, ``mdl`` or ``models`` (:func:`ncprobe.ncc.amnesic.
        check_target`)."""
        from .amnesic import check_target

        check_target(lang, **options)

    def add_run_arguments(self, parser: argparse.ArgumentParser, config: type | None = None
                          ) -> None:
        from .cli import add_ncc_arguments

        add_ncc_arguments(parser, config or self.config_class())

    def run_from_args(self, args: argparse.Namespace, config: type | None = None) -> int:
        from .cli import run_ncc_from_args

        return run_ncc_from_args(args, config or self.config_class())

    def compare_options(self) -> tuple["Option", ...]:
        from ..probes.options import compare_test_options

        return compare_test_options()

    def compare_from_args(self, args: argparse.Namespace, out: Path | None) -> int:
        from .cli import compare_ncc

        return compare_ncc(args, out)

    checks_published = True

    def verify(self, published: Sequence["Published"], *,
               data_dir: str | Path | None = None, say: Callable[[str], None] | None = None,
               **unused: Any) -> list["Measured"]:
        """SemanticQA's printed NCC accuracies (Table 3), each prediction file (key
        ``<setting>_<system>``, the file's name) re-scored as ``ncprobe run ncc`` scores it:
        percent of the items in the file answered with the gold class. Reads the files only:
        no model, no results directory (the other keywords of :meth:`Probe.verify` unused)."""
        from ..data.semanticqa import load_ncc
        from ..verify import Measured
        from .probe import published_accuracy

        if say is not None:
            say("ncc: re-scoring the published prediction files")
        got = published_accuracy(load_ncc(data_dir))
        return [Measured(p.key, 100 * got[p.key][0] / got[p.key][1],
                         note=f"{got[p.key][0]} of {got[p.key][1]} items")
                for p in published if p.key in got]

    def headline(self, results: "NccResults") -> "Headline":  # type: ignore[override]
        """NCC's headline: the accuracy over the items of each model's classifier chosen by
        nested cross-validation (kind ``selected``: chosen inside the training folds, never
        on the items it is scored on)."""
        from ..headline import Headline, mean_of, model_rows

        df = results.items
        df = df[df["kind"].astype(str) == "selected"]
        rows, _ = model_rows(df.astype({"correct": float}), model="system", unit="item",
                             columns=["correct"])
        return Headline(self.name, "NCC", "accuracy", True, "items", rows, mean_of("correct"),
                        {m: "the classifier chosen by nested cross-validation" for m in rows})

    def models_text(self) -> str:
        return ("Any model `ncprobe compute` runs classifies the items by its representations "
                "(`ncprobe models` lists the aliases);\nwith --behaviour, a causal language "
                "model (LLaMA family, GPT-2 ...: a HuggingFace id or directory) also answers "
                "them.\nThe published systems are those of the prediction files: `ncprobe "
                "data info` lists them.")

    # --- its data ---------------------------------------------------------------------------

    def reads(self, f: "UpstreamFile") -> bool:
        return f.local_path.startswith(_DATA_PREFIX) and f.local_path.endswith(
            (".json", ".txt"))

    def data_info(self, root: Path) -> tuple[dict, list[str], list[str]]:
        from ..data.semanticqa import ncc_counts

        counts, notes, errors = ncc_counts(root)
        return {"ncc": counts}, notes, errors

    def data_info_lines(self, info: dict) -> list[str]:
        c = info.get("ncc") or {}
        if not c:
            return []
        classes = " / ".join(str(c["classes"].get(k, 0)) for k in ("NC", "PC", "C"))
        return ["\nSemanticQA NCC (licence MIT):",
                f"  {c['items']} items (gold NC / PC / C {classes}), {c['systems']} prediction "
                f"files of {c['models']} systems; {c['ncimp_sentences']} sentences are "
                f"NCIMP's, {c['spliced']} spliced"]

    def check_data(self, root: Path) -> tuple[list[DataError], list[str], list[str]]:
        from ..data.semanticqa import load_ncc, ncc_stimuli

        try:
            data = load_ncc(root, accept_modified=True, collect=True)
            _, _, notes = ncc_stimuli(data, data_dir=root, accept_modified=True)
        except DataErrors as e:
            return list(e.errors), [], []
        except DataError as e:
            return [e], [], []
        return [], list(data.notes) + list(notes), []
