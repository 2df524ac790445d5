"""IdioLink, the retrieval probe, behind the probe seam (:mod:`ncprobe.probes`).

The probe's work is done by this package (:mod:`ncprobe.retrieval`) and its data module
(:mod:`ncprobe.data.idiolink`); this module declares them to the registry.
``ncprobe run idiolink`` is ``ncprobe retrieve``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..probes.base import Probe

if TYPE_CHECKING:
    from ..data.sources import UpstreamFile
    from ..errors import DataError
    from ..headline import Headline
    from ..probes.options import Option
    from ..verify import Measured, Published
    from .results import RetrievalResults

__all__ = ["IdioLinkProbe"]


class IdioLinkProbe(Probe):
    """IdioLink (the retrieval probe): queries and documents of the same meaning."""

    name = "idiolink"
    asks = ("Does a model retrieve the sentences that share an idiom's meaning, literal or "
            "idiomatic, before those that share its words?")
    data = "IdioLink: queries and documents of English idioms, test/val/train (CC BY-NC-SA 4.0)"
    shorthand = "retrieve"
    help = "IdioLink: does a model retrieve sentences of the same meaning?"
    description = (
        "Rank every document of an IdioLink split for every query, per model and query mode "
        "(sentence, span, instruction_sentence, instruction_span), and score the rankings: "
        "R-Precision and nDCG@10 overall, per query usage (literal / idiomatic), per idiom "
        "and per subject, with 95% intervals resampling idioms and paired tests between "
        "modes and models. --model bm25 is the lexical control. Writes a results directory "
        "(parquet + run.json) and prints a summary (or --json rows).")

    def results_class(self) -> type["RetrievalResults"]:
        from .results import RetrievalResults

        return RetrievalResults

    def config_class(self) -> type:
        from .config import RetrievalConfig

        return RetrievalConfig

    def run(self, config: Any = None, /, **options: Any) -> "RetrievalResults":
        from .probe import retrieve

        return retrieve(config, **options)

    def add_run_arguments(self, parser: argparse.ArgumentParser, config: type | None = None
                          ) -> None:
        from .cli import add_retrieve_arguments

        add_retrieve_arguments(parser, config or self.config_class())

    def run_from_args(self, args: argparse.Namespace, config: type | None = None) -> int:
        from .cli import run_retrieve

        return run_retrieve(args, config or self.config_class())

    def compare_options(self) -> tuple["Option", ...]:
        from .cli import compare_options

        return compare_options()

    def compare_from_args(self, args: argparse.Namespace, out: Path | None) -> int:
        from .cli import compare_idiolink

        return compare_idiolink(args, out)

    checks_published = True

    def verify(self, published: Sequence["Published"], **options: Any) -> list["Measured"]:
        """IdioLink's printed Table 2 figures (key ``<model>/<mode>/<metric>``, test split,
        every query), from one retrieval run of the models they name
        (:func:`~ncprobe.retrieval.probe.published_values`, given the keywords of
        :meth:`Probe.verify`), each with its tie range."""
        from ..verify import Measured
        from .probe import published_values

        got = published_values([p.key for p in published], **options)
        return [Measured(key, value, low, high, note="ties broken by document position")
                for key, (value, low, high) in got.items()]

    def headline(self, results: "RetrievalResults") -> "Headline":  # type: ignore[override]
        """IdioLink's headline: the mean R-Precision over the queries, sentence queries
        (the one query mode every model has, BM25 included), every query usage; resampled by
        idiom (a cluster bootstrap, as the probe's own intervals)."""
        from ..headline import Headline, mean_of, model_rows

        df = results.per_query
        df = df[df["mode"].astype(str) == "sentence"]
        rows, _ = model_rows(df, model="model", unit="idiom", columns=["r_precision"])
        return Headline(self.name, "IdioLink", "R-Precision", True, "idioms", rows,
                        mean_of("r_precision"),
                        {m: "sentence queries, every usage" for m in rows})

    def models_text(self) -> str:
        from ..encoders.prompts import GENERIC
        from ..encoders.registry import aligned, models_for

        rows = [("alias", "model", "query format", "needs")]
        for spec in models_for(self.name):
            mid = spec.ids.get("en", spec.ids.get("*", "-"))
            fmt = spec.query_format or GENERIC
            rows.append((spec.alias, mid, fmt.describe(), spec.requirements))
        return aligned(rows) + (
            "\n\nThe dense models of IdioLink's Table 2 (minilm is its SBERT row, offline). "
            "Query format: how each writes\nan instructed query (see the IdioLink protocol), "
            "with its query and document prefixes.\nModels marked --allow-remote-code run "
            "Python code from their hub repository when they load:\nncprobe refuses them "
            "unless you pass --allow-remote-code (Python: allow_remote_code=True); pass it\n"
            "only if you trust that code. Models marked a GPU are refused on a machine without "
            "one unless\nyou pass --device cpu.")

    # --- its data ---------------------------------------------------------------------------

    def reads(self, f: "UpstreamFile") -> bool:
        # the queries and documents of every split (its other files are read by nothing)
        from ..data.idiolink import DOCUMENTS_FILE, QUERIES_FILE, SPLITS

        return f.local_path in {t.format(split=s) for s in SPLITS
                                for t in (QUERIES_FILE, DOCUMENTS_FILE)}

    def data_info(self, root: Path) -> tuple[dict, list[str], list[str]]:
        from ..data.idiolink import idiolink_counts

        counts, errors = idiolink_counts(root)
        return {"idiolink": counts}, [], [str(e) for e in errors]

    def data_info_lines(self, info: dict) -> list[str]:
        lines = ["\nIdioLink (licence CC BY-NC-SA 4.0):"] if info["idiolink"] else []
        for split, c in info["idiolink"].items():
            qu = " / ".join(str(n) for n in c["query_usage"].values())
            du = " / ".join(str(n) for n in c["document_usage"].values())
            lines.append(f"  {split}: {c['queries']} queries (idiomatic / literal {qu}), "
                         f"{c['documents']} documents (idiomatic / literal / simplification / "
                         f"sense {du}), {c['idioms']} idioms")
        return lines

    def check_data(self, root: Path) -> tuple[list["DataError"], list[str], list[str]]:
        from ..data.idiolink import check_idiolink

        errors, notes = check_idiolink(root)
        return errors, notes, []
