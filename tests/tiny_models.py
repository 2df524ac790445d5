"""Tiny models built on the fly: a WordPiece tokenizer, a 3-layer BERT and a 3-layer LLaMA."""

from __future__ import annotations

from pathlib import Path

CORPUS = ["o montanha-russa é rápida e a ação do coração", "vinho branco pão-duro lua cheia",
          "the grey matter of a brain is an eager beaver", "economic aid research lab police car",
          "Este é um pão-duro . Esta é uma montanha-russa ."] * 20


def _tokenizer(kind: str):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "<s>"]
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=120,
                                                              special_tokens=specials))
    if kind == "bert":
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
        return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]",
                                       unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                       special_tokens=[("<s>", 4)])
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
