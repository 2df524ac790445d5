"""``ncprobe models``: the model aliases, what each needs, and what else ``--model`` takes."""

from __future__ import annotations

import argparse


def add_models_parser(sub, config: type) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "models", help="list the model aliases and what each needs",
        description="List the model aliases of the study (per language), the two "
        "offline models, and what each needs (what to pip install, GPU, API key). "
        "Any HuggingFace id, local model directory or vector file works as well. "
        "--probe idiolink lists the retrieval models of IdioLink's Table 2 instead, with "
        "their query formats.")
    p.add_argument("--probe", choices=("ncimp", "idiolink"), default=None,
                   help="the probe whose models to list (default: ncimp, the idiomaticity "
                   "probe)")
    return p


def run_models(args: argparse.Namespace, config: type) -> int:
    from ..encoders.registry import models_table, offline_models, study_models

    if getattr(args, "probe", None) == "idiolink":
        print(models_table("idiolink"))
        print("\nThe dense models of IdioLink's Table 2 (minilm is its SBERT row, offline). "
              "Query format: how each writes\nan instructed query (see the IdioLink protocol), "
              "with its query and document prefixes.\nModels marked --allow-remote-code run "
              "Python code from their hub repository when they load:\nncprobe refuses them "
              "unless you pass --allow-remote-code (Python: allow_remote_code=True); pass it\n"
              "only if you trust that code. Models marked a GPU are refused on a machine without "
              "one unless\nyou pass --device cpu.")
        return 0
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
