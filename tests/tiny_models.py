"""Tiny models built on the fly: a WordPiece tokenizer of a fixed vocabulary, a 3-layer BERT and
a 3-layer LLaMA, a 2-layer LLaMA and a 2-layer GPT-2 over a hand-written byte-level BPE
(single letter tokens: they answer multiple-choice prompts), a sentence-transformers model on
the BERT, and a random 2-layer ELMo biLM in AllenNLP's files.

Every process builds the same models, byte for byte: the vocabulary is written out by a rule
(:func:`vocabulary`, no training) and the weights come from fixed seeds, so xdist workers test
one model (tests/test_suite_hygiene.py checks it). The session fixtures of ``conftest.py``
build each once; a test that changes a model's files copies the directory first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

CORPUS = ["o montanha-russa é rápida e a ação do coração", "vinho branco pão-duro lua cheia",
          "the grey matter of a brain is an eager beaver", "economic aid research lab police car",
          "Este é um pão-duro . Esta é uma montanha-russa ."] * 20

#: The tokens every tiny tokenizer starts with; the post-processors below name them by id.
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "<s>")


def _words(texts) -> list[str]:
    """The corpus's words as BERT's pre-tokenizer cuts them (runs of letters or digits, and
    each punctuation mark alone), each once, in code-point order."""
    return sorted({w for text in texts for w in re.findall(r"\w+|[^\w\s]", text)})


def vocabulary() -> dict[str, int]:
    """The tiny WordPiece vocabulary, token -> id, written out from :data:`CORPUS` by a fixed
    rule (no training: the ``tokenizers`` trainer breaks ties between equally frequent pairs
    in the order of a Rust hash map, seeded anew in every process, so each process, and each
    xdist worker, got another vocabulary and split "beaver" its own way).

    The ids, in order: :data:`SPECIALS`; every character of the corpus, alone and as a
    continuation (``##c``), so a word of those characters never becomes [UNK]; then each word
    of up to three characters whole, and each longer word as its first three characters and
    the rest in pieces of three (``##...``). WordPiece takes the longest piece that matches,
    so "beaver" is ``bea ##ver`` and "montanha" ``mon ##tan ##ha``: words of several pieces, as
    the tests of sub-token pooling need, and a character outside the corpus (the "z" of
    "zebra") makes its word [UNK].
    """
    words = _words(CORPUS)
    chars = sorted({c for w in words for c in w})
    tokens = list(SPECIALS) + chars + ["##" + c for c in chars]
    for w in words:
        tokens += [w[:3]] + ["##" + w[i:i + 3] for i in range(3, len(w), 3)]
    return {t: i for i, t in enumerate(dict.fromkeys(tokens))}  # first place of each token


def _tokenizer(kind: str):
    """The tiny models' fast tokenizer over :func:`vocabulary`: BERT's ([CLS] ... [SEP], a pad
    token) for ``kind="bert"``, else a LLaMA-like one (<s> first, no pad token)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = vocabulary()
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if kind == "bert":
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]),
                                                     ("[SEP]", vocab["[SEP]"])])
        return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]",
                                       unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                       special_tokens=[("<s>", vocab["<s>"])])
    # no pad token: the encoder must provide one
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", bos_token="<s>",
                                   eos_token="[SEP]")


def tiny_bert(path: Path) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    tok = _tokenizer("bert")
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=3,
                                 num_attention_heads=2, intermediate_size=64,
                                 max_position_embeddings=128))
    tok.save_pretrained(path)
    model.save_pretrained(path)
    return path


def tiny_llama(path: Path) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _tokenizer("llama")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32,
                                         num_hidden_layers=3, num_attention_heads=2,
                                         num_key_value_heads=2, intermediate_size=64,
                                         max_position_embeddings=128))
    tok.save_pretrained(path)
    model.save_pretrained(path)
    return path


def byte_bpe(spaced_letters: bool = True):
    """A GPT-2-like byte-level BPE: <s>, </s>, the 256 byte symbols, and (``spaced_letters``)
    the merges "Ġ A".."Ġ D", so that " A".." D" are single tokens as in GPT-2 or LLaMA-3. No
    training: the same tokenizer in every process."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["<s>", "</s>"]
                                        + sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges = []
    for letter in "ABCD" if spaced_letters else "":
        vocab["Ġ" + letter] = len(vocab)
        merges.append(("Ġ", letter))
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                       special_tokens=[("<s>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")


def tiny_byte_llama(path: Path, head: bool = True) -> Path:
    """A 2-layer LLaMA over :func:`byte_bpe` (every prompt fits: 1024 positions), with its
    causal-LM head (``head``) or without it; a wide initialisation, so that the letters'
    log-probabilities after SemanticQA's prompts differ from item to item."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, LlamaModel

    tok = byte_bpe()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, intermediate_size=64,
                         max_position_embeddings=1024, initializer_range=0.5)
    model = LlamaForCausalLM(config) if head else LlamaModel(config)
    tok.save_pretrained(path)
    model.save_pretrained(path)
    return path


def tiny_gpt2(path: Path) -> Path:
    """A 2-layer GPT-2 over :func:`byte_bpe`, saved as ``GPT2LMHeadModel`` (its config's
    ``architectures``: a causal LM whose class name does not end with ForCausalLM)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = byte_bpe()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=1024,
                        initializer_range=0.5, bos_token_id=0, eos_token_id=1)
    tok.save_pretrained(path)
    GPT2LMHeadModel(config).save_pretrained(path)
    return path


def make_st_dir(bert_dir: Path, path: Path) -> Path:
    """A sentence-transformers model: tiny BERT + mean pooling + a Dense layer (2_Dense/)."""
    import torch
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Dense, Pooling, Transformer
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Dense, Pooling, Transformer

    torch.manual_seed(0)
    transformer = Transformer(str(bert_dir))
    pooling = Pooling(32, "mean")  # tiny BERT: hidden size 32
    dense = Dense(32, 16)
    SentenceTransformer(modules=[transformer, pooling, dense], device="cpu").save(str(path))
    assert (path / "2_Dense").is_dir()
    return path


# A small biLM in the layout of AllenNLP's options.json (field names of the released models).
ELMO_OPTIONS = {
    "lstm": {"use_skip_connections": True, "projection_dim": 8, "dim": 12, "n_layers": 2,
             "cell_clip": 3, "proj_clip": 3},
    "char_cnn": {"activation": "relu", "filters": [[1, 4], [2, 6], [3, 6]], "n_highway": 1,
                 "embedding": {"dim": 5}, "n_characters": 262,
                 "max_characters_per_token": 50},
}


def write_tiny_elmo(path: Path, seed: int = 0, options: dict = ELMO_OPTIONS,
                    names=("options.json", "weights.hdf5")) -> Path:
    """options.json + weights.hdf5 with random weights, in the datasets and shapes that
    AllenNLP's loader reads (TensorFlow layouts: W_cnn (1, width, char_dim, n), LSTM W_0
    (input + hidden, 4 * cell), W_P_0 (cell, hidden), highway/projection (in, out))."""
    import h5py

    rng = np.random.default_rng(seed)

    def rand(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    path.mkdir(parents=True, exist_ok=True)
    (path / names[0]).write_text(json.dumps(options))
    cnn, lstm = options["char_cnn"], options["lstm"]
    char_dim, filters = cnn["embedding"]["dim"], cnn["filters"]
    n_filters = sum(n for _, n in filters)
    proj, cell = lstm["projection_dim"], lstm["dim"]
    with h5py.File(path / names[1], "w") as f:
        f["char_embed"] = rand(261, char_dim)  # character ids 0..260 (+1 for padding)
        for i, (width, num) in enumerate(filters):
            f[f"CNN/W_cnn_{i}"] = rand(1, width, char_dim, num)
            f[f"CNN/b_cnn_{i}"] = rand(num, scale=0.1)
        for k in range(cnn["n_highway"]):
            for part in ("transform", "carry"):
                f[f"CNN_high_{k}/W_{part}"] = rand(n_filters, n_filters, scale=0.3)
                f[f"CNN_high_{k}/b_{part}"] = rand(n_filters, scale=0.1)
        f["CNN_proj/W_proj"] = rand(n_filters, proj, scale=0.3)
        f["CNN_proj/b_proj"] = rand(proj, scale=0.1)
        for direction in range(2):
            for layer in range(lstm["n_layers"]):
                g = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
                f[f"{g}/W_0"] = rand(proj + proj, 4 * cell, scale=0.4)
                f[f"{g}/B"] = rand(4 * cell, scale=0.1)
                f[f"{g}/W_P_0"] = rand(cell, proj, scale=0.4)
    return path
