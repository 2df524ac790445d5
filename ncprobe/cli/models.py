"""``ncprobe models``: the model aliases, what each needs, and what else ``--model`` takes."""

from __future__ import annotations

import argparse

from ..probes import probe_names


def add_models_parser(sub, config: type) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "models", help="list the model aliases and what each needs",
        description="List the model aliases of the study (per language), the two "
        "offline models, and what each needs (what to pip install, GPU, API key). "
        "Any HuggingFace id, local model directory or vector file works as well. "
        "--probe idiolink lists the retrieval models of IdioLink's Table 2 instead, with "
        "their query formats.")
    p.add_argument("--probe", choices=probe_names(), default=None,
                   help="the probe whose models to list (default: ncimp, the idiomaticity "
                   "probe)")
    return p


def run_models(args: argparse.Namespace, config: type) -> int:
    from ..probes import get_probe

    print(get_probe(args.probe or probe_names()[0]).models_text())
    return 0
