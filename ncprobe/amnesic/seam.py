"""AmnesicProbe: amnesic probing declared to the registry (``ncprobe run amnesic``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..probes.base import Peers, Probe
from .config import AmnesicConfig
from .results import AmnesicResults

if TYPE_CHECKING:
    from ..probes.options import Option


class AmnesicProbe(Probe):
    """Does the model use what a probe finds? Erase it, and measure the other probes."""

    name = "amnesic"
    asks = ("Does erasing what a probe finds (LEACE) change what the other probes measure, "
            "more than erasing random directions of the same rank?")
    data = "the concept's and the targets' data (AStitch, NCIMP, NCC): none of its own"
    help = "amnesic probing: erase a probe's concept (LEACE), re-measure the other probes"
    description = (
        "Fit LEACE erasers of a concept (a probe's own labels: AStitch's idiomatic or literal "
        "use, NCIMP's compositionality class) on its training rows, view by view, and of a "
        "control of the same rank (the labels permuted); run every target probe plain, "
        "erased and control; report each target's metric per view with its interval, the "
        "paired changes and the erased-vs-control test, and the concept's own probe before "
        "and after erasure (LEACE's guarantee, shown). Writes a results directory and prints "
        "a summary (or --json).")

    def results_class(self) -> type[AmnesicResults]:
        return AmnesicResults

    def config_class(self) -> type:
        return AmnesicConfig

    def run(self, config: Any = None, /, **options: Any) -> AmnesicResults:
        from .probe import run_amnesic_probe

        return run_amnesic_probe(config, peers=self._peers(), **options)

    def add_run_arguments(self, parser: argparse.ArgumentParser, config: type | None = None
                          ) -> None:
        from ..probes.options import probe_run_options

        probe_run_options(parser, config or AmnesicConfig,
                          out_help="results directory (default: "
                          "results/amnesic-<model>-<lang>-<concept>)",
                          json_help="print the changes and the guarantee as JSON rows")

    def run_from_args(self, args: argparse.Namespace, config: type | None = None) -> int:
        from ..probes.options import run_probe
        from .probe import run_amnesic_probe

        return run_probe(args, config or AmnesicConfig, run_amnesic_probe,
                         lambda cfg: Path("results") / f"amnesic-{Path(cfg.model).name}-"
                                                       f"{cfg.lang}-{cfg.concept}",
                         peers=self._peers())

    def _peers(self) -> Peers:
        from ..errors import UsageError

        if self.peers is None:
            raise UsageError("this AmnesicProbe was made by hand: take it from the registry "
                             "(ncprobe.probes.get_probe('amnesic')), which hands it the other "
                             "probes")
        return self.peers

    def compare_options(self) -> tuple[Option, ...]:
        """``--correct`` only: the comparison resamples nothing (:meth:`AmnesicResults.
        compare`), so ``--n-boot`` and ``--seed`` would do nothing and are refused."""
        from ..probes.options import compare_test_options

        return tuple(o for o in compare_test_options() if o.flags[0] == "--correct")

    def compare_from_args(self, args: argparse.Namespace, out: Path | None) -> int:
        """``ncprobe compare A B`` of two amnesic runs: A's erased-vs-control change against
        B's, cell by cell (:meth:`AmnesicResults.compare`), printed and, with ``--out``,
        written."""
        from ..errors import UsageError
        from ..probes.commands import write_comparison
        from .results import comparison_table

        if not args.results_b:
            raise UsageError("amnesic results: give two sides (RESULTS_A RESULTS_B); each "
                             "run's erased-vs-control tests are in its changes table")
        a, b = (AmnesicResults.load_many([side], exclude=args.exclude,
                                         accept_edited=args.accept_edited_results)
                for side in (args.results_a, args.results_b))
        df = a.compare(b, names=[args.results_a, args.results_b],
                       correction=getattr(args, "correct", None))
        markdown, latex = comparison_table(df)
        edited = a.edited_lines() + b.edited_lines()
        text = "".join(f"{line}\n\n" for line in edited) + markdown
        print(text, end="")
        if out is not None:
            write_comparison(out, df, markdown="amnesic probing: erased - control, run A "
                             "against run B (ncprobe compare)\n\n" + text, latex=latex,
                             overwrite=args.overwrite)
            print(f"written to {out}", file=sys.stderr)
        return 0

    def models_text(self) -> str:
        return ("Any model the concept's and the targets' probes run (`ncprobe models`); "
                "glove-6b-50d runs offline.")

    # --- its data: the concept's and the targets', which those probes read and check -------

    def reads(self, f: Any) -> bool:
        return False

    def data_info(self, root: Path) -> tuple[dict, list[str], list[str]]:
        return {}, [], []

    def data_info_lines(self, info: dict) -> list[str]:
        return []

    def check_data(self, root: Path) -> tuple[list, list[str], list[str]]:
        return [], [], []
