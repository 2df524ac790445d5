"""``ncprobe models``: the model aliases, what each needs, and what else ``--model`` takes."""

from __future__ import annotations

import argparse


def add_models_parser(sub, config: type) -> argparse.ArgumentParser:
    return sub.add_parser(
        "models", help="list the model aliases and what each needs",
        description="List the model aliases of the study (per language), the two "
        "offline models, and what each needs (what to pip install, GPU, API key). "
        "Any HuggingFace id, local model directory or vector file works as well.")


def run_models(args: argparse.Namespace, config: type) -> int:
    from ..encoders.registry import models_table, offline_models, study_models

    print(models_table())
    print(f"\nOffline: {', '.join(offline_models())}. The study's models: "
          f"{', '.join(study_models())}.\n`ncprobe reproduce` runs these, the offline ones first, "
          "and says why it skips each one that cannot run here.")
    print("\nAlso: any HuggingFace id (org/name), a local model directory, a vector file "
          "(word2vec .bin/.txt, GloVe .txt; gensim .kv with --allow-pickle), or "
          "gensim:<gensim-data name>.\n"
          "gensim:NAME and word2vec (en) load through gensim.downloader, which downloads and "
          "runs Python code\nfrom the gensim-data repository: ncprobe refuses them unless you "
          "pass --allow-gensim-downloader.\n"
          "--layers, --dtype and --device apply to transformer models only (ELMo: --device); "
          "elsewhere they are refused.\n"
          "HuggingFace ids and transformer model directories need ncprobe[hf] (install torch "
          "first: see the README), ELMo directories ncprobe[elmo].")
    return 0
