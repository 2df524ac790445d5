"""The Encoder protocol: pre-tokenised sentences with one word span each -> vectors.

Every model family satisfies one small protocol. Given a batch of sentences
(each a sequence of words) and one word span ``[start, end)`` per sentence, an
encoder returns, for each configured *view* (a set of layers averaged
together), the sentence vector and the span vector:

* a word vector is the mean of its sub-token vectors;
* the span vector is the mean of the span's word vectors;
* the sentence vector is the mean of the sentence's word vectors.

Special tokens ([CLS], [SEP], <s>, padding) belong to no word and are never
pooled. A word that the model cannot represent (a static model's
out-of-vocabulary word, a word the tokenizer maps to no sub-token) is left out
of the means and counted; a span with no representable word gets NaN and is
reported, never silently replaced by zeros or by the sentence vector.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import DataError, ModelUnavailableError, UsageError

#: The default layer view of transformer models: the mean of the last four layers.
LAST_FOUR = (-4, -3, -2, -1)


@dataclass
class Encoded:
    """What an encoder returns for a batch of ``n`` sentences.

    Attributes:
        sent: ``(n, views, dim)`` float32 sentence vectors (NaN where not available).
        span: ``(n, views, dim)`` float32 span vectors (NaN where no word of the
            span could be represented).
        missing_words: per sentence, the number of words left out (OOV etc.).
        missing_span_words: per sentence, the number of span words left out.
    """

    sent: np.ndarray
    span: np.ndarray
    missing_words: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    missing_span_words: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))


@runtime_checkable
class Encoder(Protocol):
    """What every model family implements.

    Attributes:
        name: the model's user-facing name (alias or id).
        dim: vector size.
        views: the layer views, one tuple of layer indices each (``((0,),)`` for
            models without layers).
        levels: which of ``sent`` and ``nc`` the encoder provides.
        view_names: optional labels of the views for results tables (default: the
            layer indices joined with ``+``, e.g. ``9+10+11+12``).
    """

    name: str
    dim: int
    views: tuple[tuple[int, ...], ...]
    levels: tuple[str, ...]

    def fingerprint(self) -> dict:
        """Everything that determines the vectors: model id, revision or weight hash,
        views, pooling, dtype, format version. Two encoders with equal
        fingerprints must return equal vectors."""
        ...

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        """Encode one batch."""
        ...


class SentenceTooLongError(DataError):
    """A sentence of the batch has more tokens than the model takes.

    :func:`ncprobe.embed.embed` turns it into a :class:`~ncprobe.errors.DataError` that
    names the stimulus (file, row, NC, context, probe).

    Attributes:
        index: the sentence's position in the batch given to ``encode``.
        n_tokens: its length in the model's tokens (special tokens included).
        limit: the most tokens the model takes.
    """

    def __init__(self, model: str, index: int, n_tokens: int, limit: int) -> None:
        self.model, self.index, self.n_tokens, self.limit = model, index, n_tokens, limit
        super().__init__(f"{model}: sentence {index} of the batch has {n_tokens} tokens, more "
                         f"than the model's limit of {limit}")


#: What to install for transformer models (HF encoders, decoder LLMs, sentence-transformers).
HF_INSTALL_HINT = ("pip install 'ncprobe[hf]' (install torch first, the CPU build where there "
                   "is no GPU: see the README)")

#: The packages (modules) each transformer family needs; none is installed by ``pip install
#: ncprobe``, whose default model (static GloVe) needs none of them.
HF_PACKAGES = {"hf": ("torch", "transformers"),
               "sbert": ("torch", "transformers", "sentence_transformers")}


def path_name(path: str | os.PathLike) -> str:
    """The display name of a model given as a path: its folder's name and its own
    (``a/vectors.txt``, ``models/elmo-pt``), so that files of one name in different folders
    (``a/vectors.txt`` and ``b/vectors.txt``) are told apart in every table, figure and
    report. The folder is that of the path as given, made absolute (``..`` removed, links
    not followed); a path at the root of the file system is named by itself."""
    p = Path(os.path.abspath(Path(path).expanduser()))
    return f"{p.parent.name}/{p.name}" if p.parent.name else p.name


def missing_module(names: Sequence[str]) -> str | None:
    """The first of the modules ``names`` that cannot be imported, found without importing
    it (importing torch costs seconds, and a run whose vectors are cached never needs it)."""
    import importlib.util

    for name in names:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):  # a broken or blocked package
            return name
    return None


def require_hf(model: str, family: str = "hf") -> None:
    """Refuse a transformer model whose packages are not installed, saying what to install.

    Raises:
        ModelUnavailableError: torch, transformers or (``family="sbert"``)
            sentence-transformers is missing (exit 5).
    """
    why = hf_missing(model, family)
    if why:
        raise ModelUnavailableError(why)


def hf_missing(model: str, family: str = "hf") -> str | None:
    """Why transformer model ``model`` cannot run here for want of a package, else None."""
    missing = missing_module(HF_PACKAGES[family])
    return str(hf_unavailable(model, missing, family)) if missing else None


def hf_unavailable(model: str, missing: str, family: str = "hf") -> ModelUnavailableError:
    """The error for a transformer model whose package ``missing`` is not installed."""
    names = [n.replace("_", "-") for n in HF_PACKAGES[family]]
    return ModelUnavailableError(
        f"{model} needs {', '.join(names[:-1])} and {names[-1]}, which a plain `pip install "
        f"ncprobe` leaves out ({missing.replace('_', '-')} is not installed): "
        f"{HF_INSTALL_HINT}")


#: The names ``--dtype`` accepts, and the torch dtype each means.
DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
          "half": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16"}


def parse_dtype(dtype: str | None) -> str:
    """The torch dtype name that ``--dtype`` means (``None``: float32).

    Raises:
        UsageError: a name that is no dtype.
    """
    name = DTYPES.get(dtype or "float32")
    if name is None:
        raise UsageError(f"--dtype {dtype!r} is not a dtype; use float32, float16 or bfloat16")
    return name


def unreachable(url: str, timeout: float = 3.0) -> str | None:
    """Why ``url``'s server cannot be reached now (one TCP connection, ``timeout`` s), else None.

    Connects to the proxy instead when one is configured for the URL's scheme, as
    the download itself would.
    """
    import socket
    import urllib.parse
    import urllib.request

    u = urllib.parse.urlsplit(url)
    host, port = u.hostname or "", u.port or (443 if u.scheme == "https" else 80)
    proxy = urllib.request.getproxies().get(u.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        p = urllib.parse.urlsplit(proxy if "//" in proxy else "//" + proxy)
        host, port = p.hostname or host, p.port or 8080
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        return f"{host} cannot be reached ({e})"
    return None


def gpu_unavailable(model: str) -> str | None:
    """Why ``model``, too large for a CPU, cannot run on a GPU here, else None (imports torch)."""
    if missing_module(("torch",)):
        return f"{model} needs a GPU and torch, which is not installed: {HF_INSTALL_HINT}"
    import torch

    if torch.cuda.is_available():
        return None
    return (f"{model} needs a GPU; none is visible. To run it on the CPU anyway (float32, "
            "about 4 bytes per parameter of memory), pass --device cpu")


def torch_device(device: str | None, model: str):
    """The ``torch.device`` to run ``model`` on: ``device``, or cuda when visible, else cpu.

    Raises:
        UsageError: ``device`` is no device name torch knows.
        ModelUnavailableError: the device is not there (no CUDA device visible, a CPU-only
            torch build, no MPS), with what to do; instead of torch's own traceback later.
    """
    try:
        import torch
    except ImportError as e:  # the encoders check their packages first: a broken torch
        raise ModelUnavailableError(
            f"{model} needs torch, which cannot be imported ({e}): {HF_INSTALL_HINT} "
            "(ELMo: pip install 'ncprobe[elmo]')") from e

    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as e:
        raise UsageError(f"--device {device!r} is not a device name (cpu, cuda, cuda:1, mps): "
                         f"{e}") from e
    if dev.type == "cuda":
        if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
            raise ModelUnavailableError(
                f"--device {device} for {model}: this torch ({torch.__version__}) is a CPU-only "
                "build. Install a CUDA build of torch (https://pytorch.org/get-started/locally/)"
                " on a machine with an NVIDIA GPU, or pass --device cpu")
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ModelUnavailableError(
                f"--device {device} for {model}: no CUDA device is visible (driver missing, "
                "or CUDA_VISIBLE_DEVICES hides them); run on a GPU machine or pass --device cpu")
        if dev.index is not None and dev.index >= count:
            raise ModelUnavailableError(f"--device {device} for {model}: only {count} CUDA "
                                        f"device(s) are visible (cuda:0..cuda:{count - 1})")
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise ModelUnavailableError(f"--device {device} for {model}: MPS (Apple GPU) is not "
                                    "available here; pass --device cpu")
    return dev


@contextlib.contextmanager
def hash_cache():
    """The per-file hash cache of model weights, ``<cache root>/file-sha256.json``, saved
    when the block ends (whether or not hashing succeeded).

    Fingerprints hash the content of every weight file; remembering each file's digest
    (by path, size and times) keeps that to one read per changed file.
    """
    from .._io import HASH_CACHE_NAME, FileHashCache
    from ..cache import cache_root

    cache = FileHashCache(cache_root() / HASH_CACHE_NAME)
    try:
        yield cache
    finally:
        cache.save()


def pool_batch(states, word_ids, n_words: Sequence[int], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
    """Sub-token -> word -> sentence/span mean pooling for a batch, in float32.

    Args:
        states: ``(B, V, T, D)`` token vectors per view.
        word_ids: ``(B, T)`` word index of each token, -1 for special and pad tokens.
        n_words: words per sentence.
        spans: word span per sentence.
    """
    import torch

    w = max(n_words)
    ar = torch.arange(w, device=states.device)
    assign = (word_ids.unsqueeze(1) == ar.view(1, w, 1)).float()  # (B, W, T)
    counts = assign.sum(-1)  # (B, W)
    words = torch.einsum("bwt,bvtd->bvwd", assign, states) / counts.clamp(min=1)[:, None, :, None]
    valid = ar.unsqueeze(0) < torch.tensor(n_words, device=states.device).unsqueeze(1)
    has = (counts > 0) & valid
    starts = torch.tensor([s for s, _ in spans], device=states.device).unsqueeze(1)
    ends = torch.tensor([e for _, e in spans], device=states.device).unsqueeze(1)
    in_span = (ar.unsqueeze(0) >= starts) & (ar.unsqueeze(0) < ends)

    def mean(mask):
        m = mask.float()[:, None, :, None]
        total = (words * m).sum(2)
        n = m.sum(2)
        out = total / n.clamp(min=1)
        return torch.where(n > 0, out, torch.full_like(out, float("nan")))
    sent = mean(has)
    span = mean(has & in_span)
    missing = (valid & ~has).sum(1)
    missing_span = (valid & in_span & ~has).sum(1)
    return Encoded(sent.cpu().numpy(), span.cpu().numpy(), missing.cpu().numpy().astype(np.int32),
                   missing_span.cpu().numpy().astype(np.int32))
