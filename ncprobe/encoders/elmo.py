"""ELMo (Peters et al. 2018) from AllenNLP weight files, through ``simple_elmo_pytorch``.

A model is the pair ``options.json`` (hyper-parameters) + ``weights.hdf5`` (weights),
as AllenNLP and the Portuguese model of Quinta de Castro et al. (2018) ship them.
ncprobe cannot download them; pass the directory that holds both (or the two
paths) to :class:`ElmoEncoder`, or the directory as the model name to
:func:`~ncprobe.encoders.load_encoder`.

How vectors are made (method §2):

* ELMo reads characters, so every word is one "token": there are no sub-tokens and
  every word is represented (no out-of-vocabulary words). Words longer than 48
  UTF-8 bytes are cut there by ELMo's character mapper.
* A word vector is the concatenation of ELMo's layers: layer 0, the context-free
  character CNN output (duplicated to the width of the biLSTM, as ELMo does), then
  each biLSTM layer (forward and backward states). With the usual 2-layer biLM the
  vector has ``3 × 2 × projection_dim`` components (768 for the "small" model,
  3072 for the original one).
* There is one layer view, ``((0, 1, 2),)`` for a 2-layer biLM: all layers, here
  **concatenated** (not averaged as in the transformer views); it is labelled
  ``concat:0,1,2`` in results tables (``view_names``).
* The span vector is the mean of the span's word vectors, the sentence vector the
  mean of all the sentence's word vectors; ELMo's ``<S>``/``</S>`` boundary
  positions and padding are never pooled (:func:`~ncprobe.encoders._pool.pool_batch`).
* AllenNLP's biLSTM is *stateful*: it carries its final states into the next call,
  so a sentence's vectors would depend on what was encoded before it. ncprobe turns
  that off: every batch starts from zero states, so vectors are the same on every
  run, in any batch order and whatever else is in the batch.
* Computation and output are float32.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import ClassVar, Sequence

from .._io import hash_cache
from ..errors import ModelUnavailableError, NcprobeError
from ._env import missing_module, path_name, torch_device
from ._pool import pool_batch
from .base import Encoded

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
INSTALL_HINT = "pip install 'ncprobe[elmo]'"
_MAX_CHARS = 50  # ELMo's character mapper writes 50 character ids per word

#: The two models of the study: where to get them. ncprobe does not download them.
DOWNLOADS = {
    "allennlp-small": (
        "the AllenNLP 'small' English ELMo (2x1024_128_2048cnn_1xhighway)",
        "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/2x1024_128_2048cnn_1xhighway/"
        "elmo_2x1024_128_2048cnn_1xhighway_options.json",
        "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/2x1024_128_2048cnn_1xhighway/"
        "elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5"),
    "quinta-de-castro-2018": (
        "the Portuguese ELMo of Quinta de Castro et al. (2018), distributed by AllenNLP",
        "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/contributed/pt/"
        "elmo_pt_options.json",
        "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/contributed/pt/"
        "elmo_pt_weights.hdf5"),
}


def download_hint(model_id: str) -> str:
    """How to get a model of the study by hand and hand it to ncprobe."""
    what, options_url, weights_url = DOWNLOADS[model_id]
    return (f"ncprobe cannot download ELMo weights. Download {what}: the options file "
            f"{options_url} and the weights file {weights_url}, put both in one directory and "
            "pass that directory as the model (CLI: --model DIR; Python: load_encoder(DIR)). "
            f"ELMo needs the extra: {INSTALL_HINT}")


def looks_like_elmo_dir(path: Path) -> bool:
    """A directory that is meant as an ELMo model: it holds an ``*.hdf5`` file or an
    ``options.json`` (or, when it is no HF/sentence-transformers directory, an
    ``*options*.json`` such as ``elmo_pt_options.json``)."""
    if (path / "options.json").is_file() or any(path.glob("*.hdf5")):
        return True
    if (path / "config.json").is_file() or (path / "modules.json").is_file():
        return False
    return any(path.glob("*options*.json"))


def find_elmo_files(directory: str | Path) -> tuple[Path, Path]:
    """``(options, weights)`` in a directory.

    ``options.json`` and ``weights.hdf5`` are taken when present; otherwise the one
    ``*options*.json`` and the one ``*.hdf5`` file (AllenNLP's own file names).
    """
    d = Path(directory).expanduser()
    if not d.is_dir():
        raise NcprobeError(f"{d}: no such ELMo model directory")

    def one(exact: str, pattern: str, what: str) -> Path:
        if (d / exact).is_file():
            return d / exact
        found = sorted(p for p in d.glob(pattern) if p.is_file())
        if len(found) == 1:
            return found[0]
        if not found:
            raise NcprobeError(f"{d}: missing {exact} ({what}); an ELMo model directory holds "
                               "options.json and weights.hdf5 (AllenNLP's elmo_*_options.json "
                               "and elmo_*_weights.hdf5 names work too)")
        raise NcprobeError(f"{d}: several {pattern} files ({', '.join(p.name for p in found)}); "
                           f"name the one to use {exact} or pass the two files explicitly")
    return one("options.json", "*options*.json", "the ELMo options file"), \
        one("weights.hdf5", "*.hdf5", "the ELMo weights file, HDF5")


def _check_options(options: dict, path: Path) -> None:
    """Fail early, with the file named, on options the loader cannot use."""
    try:
        lstm, cnn = options["lstm"], options["char_cnn"]
        filters = [(int(w), int(n)) for w, n in cnn["filters"]]
        sizes = [int(lstm[k]) for k in ("projection_dim", "dim", "n_layers")]
        sizes += [int(cnn["embedding"]["dim"])] + [x for f in filters for x in f]
        n_highway = int(cnn["n_highway"])
        max_chars = int(cnn["max_characters_per_token"])
        activation = cnn["activation"]
    except (KeyError, TypeError, ValueError) as e:
        raise NcprobeError(f"{path}: not an ELMo options file (missing or bad entry: {e})") from e
    if not filters or min(sizes) < 1 or n_highway < 0:
        raise NcprobeError(f"{path}: not an ELMo options file (empty filters or a size < 1)")
    if max_chars != _MAX_CHARS:
        raise NcprobeError(f"{path}: max_characters_per_token is {max_chars}; ELMo's character "
                           f"mapper writes {_MAX_CHARS} characters per word")
    if activation not in ("relu", "tanh"):
        raise NcprobeError(f"{path}: unknown char_cnn activation {activation!r} (relu or tanh)")
    if not lstm.get("use_skip_connections"):
        raise NcprobeError(f"{path}: lstm.use_skip_connections is not set; only biLMs with "
                           "residual connections (all published ELMo models) are supported")


#: The packages (modules) ELMo needs: the extra ``elmo``.
PACKAGES = ("h5py", "torch", "simple_elmo_pytorch")


def packages_missing() -> str | None:
    """Why ELMo cannot run here for want of a package (found without importing it:
    importing torch costs seconds, and a run whose vectors are cached never needs it),
    else None."""
    missing = missing_module(PACKAGES)
    if missing is None:
        return None
    return ("ELMo needs the packages simple-elmo-pytorch, h5py and torch "
            f"({missing} is missing): {INSTALL_HINT}")


class ElmoEncoder:
    """ELMo word vectors (all layers concatenated), pooled to spans and sentences.

    Args:
        model_dir_or_files: a directory holding ``options.json`` and ``weights.hdf5``
            (see :func:`find_elmo_files`), or the pair ``(options, weights)`` of paths.
        name: the user-facing name (default: the directory's parent folder and name,
            ``models/elmo-pt`` (:func:`~ncprobe.encoders._env.path_name`), or the weights
            file name).
        device: ``cpu``, ``cuda``, ...; default: cuda when available.
    """

    levels = ("sent", "nc")
    #: the load_encoder options that apply: the device; the dtype only as float32 (ELMo runs
    #: in float32); no layers (one view, every layer concatenated)
    OPTIONS: ClassVar[dict] = {"device": None, "dtype": ("float32",)}
    #: why the other options do not apply (load_encoder's message)
    OPTIONS_NOTE = ("an ELMo model has one layer view, its layers concatenated (method §2), and "
                    "runs in float32")

    def __init__(self, model_dir_or_files, *, name: str | None = None,
                 device: str | None = None) -> None:
        why = packages_missing()
        if why:
            raise ModelUnavailableError(why)
        if isinstance(model_dir_or_files, (str, Path)):
            options_path, weights_path = find_elmo_files(model_dir_or_files)
            default_name = path_name(model_dir_or_files)  # its folder too: a/elmo, b/elmo
        else:
            options_path, weights_path = (Path(p).expanduser() for p in model_dir_or_files)
            default_name = weights_path.stem
            for p, what in ((options_path, "options file"), (weights_path, "weights file")):
                if not p.is_file():
                    raise NcprobeError(f"{p}: no such ELMo {what}")
        self.options_path, self.weights_path = options_path.resolve(), weights_path.resolve()
        self.name = name or default_name
        try:
            options = json.loads(self.options_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise NcprobeError(f"{self.options_path}: unreadable ELMo options file: {e}") from e
        if not isinstance(options, dict):
            raise NcprobeError(f"{self.options_path}: not an ELMo options file (not an object)")
        _check_options(options, self.options_path)
        self.n_lstm_layers = int(options["lstm"]["n_layers"])
        self.projection_dim = int(options["lstm"]["projection_dim"])
        self._device_arg, self._device, self._bilm = device, None, None
        if device is not None and device != "cpu":  # asked for: a missing device fails now
            self._device = torch_device(device, self.name)
        # the biLM is loaded on the first encode; its shape follows from the options: the
        # character CNN (layer 0) and each biLSTM layer, each 2 x projection_dim wide
        n_layers = self.n_lstm_layers + 1
        #: one view: all layers (0 = character CNN, 1.. = biLSTM layers), concatenated
        self.views = (tuple(range(n_layers)),)
        #: results-table label: concatenated, unlike the "+"-joined (averaged) HF views
        self.view_names = ("concat:" + ",".join(str(i) for i in range(n_layers)),)
        self.dim = n_layers * 2 * self.projection_dim
        self._hashes: tuple[str, str] | None = None

    @property
    def loaded(self) -> bool:
        """Whether the biLM is in memory."""
        return self._bilm is not None

    @property
    def device(self):
        """The ``torch.device`` the biLM runs on (resolving it imports torch)."""
        if self._device is None:
            self._device = torch_device(self._device_arg, self.name)
        return self._device

    @property
    def bilm(self):
        """The ``simple_elmo_pytorch`` biLM (loaded on first use)."""
        if self._bilm is None:
            self._load()
        return self._bilm

    def _load(self) -> None:
        """Load the weights; they must match the options the fingerprint was made from."""
        try:
            from simple_elmo_pytorch import ElmoBiLmSentence
            from simple_elmo_pytorch.checks import ConfigurationError
        except ImportError as e:
            raise ModelUnavailableError("ELMo needs the packages simple-elmo-pytorch, h5py and "
                                        f"torch ({e.name or e} is missing): {INSTALL_HINT}") from e
        device = self.device
        try:
            bilm = ElmoBiLmSentence(str(self.options_path), str(self.weights_path),
                                    requires_grad=False)
        except (KeyError, OSError, ValueError, RuntimeError, TypeError,
                ConfigurationError) as e:
            raise NcprobeError(f"could not load ELMo from {self.options_path} and "
                               f"{self.weights_path} (do the two files belong together?): "
                               f"{type(e).__name__}: {e}") from e
        n_chars = bilm._token_embedder._char_embedding_weights.shape[0]
        if n_chars < 262:  # character ids 1..261 (0 is padding)
            raise NcprobeError(f"{self.weights_path}: char_embed has {n_chars - 1} rows; ELMo's "
                               "character ids need 261")
        shape = (bilm.num_layers, bilm.num_layers * bilm.get_output_dim())
        if shape != (len(self.views[0]), self.dim):  # what the fingerprint says must run
            raise NcprobeError(f"{self.weights_path}: the biLM has {shape[0]} layers of "
                               f"{shape[1]} components in all; its options say "
                               f"{len(self.views[0])} and {self.dim}")
        # AllenNLP's biLSTM keeps its final states and starts the next call from them: never
        # read them (stateful off) and clear them around every call (layers()), as the
        # package's state bookkeeping fails on a batch larger than every batch before it
        bilm._elmo_lstm.stateful = False
        bilm._elmo_lstm.reset_states()
        self._bilm = bilm.to(device).eval()

    def fingerprint(self) -> dict:
        if self._hashes is None:  # ELMo reads these two files and nothing else
            with hash_cache() as cache:
                self._hashes = (cache.sha256(self.options_path), cache.sha256(self.weights_path))
        return {"family": "elmo", "name": self.name, "options_sha256": self._hashes[0],
                "weights_sha256": self._hashes[1], "views": self.views,
                "layers": "concatenated", "pooling": "word-mean (one token per word)",
                "dtype": "float32", "format": FORMAT_VERSION}

    def layers(self, sentences: Sequence[Sequence[str]]):
        """Run the biLM on a batch, from zero states.

        Returns ``(activations, mask)``: one ``(B, T + 2, 2 × projection_dim)`` tensor per
        layer and the ``(B, T + 2)`` mask; position 0 is ``<S>``, positions ``1..n`` the
        sentence's words, ``n + 1`` is ``</S>``, the rest padding.
        """
        import torch
        from simple_elmo_pytorch import batch_to_ids

        if any(len(s) == 0 for s in sentences):
            raise NcprobeError("ELMo cannot encode an empty sentence")
        bilm = self.bilm
        ids = batch_to_ids([[str(w) for w in s] for s in sentences]).to(self.device)
        lstm = bilm._elmo_lstm
        with torch.inference_mode():
            lstm.reset_states()
            try:
                out = bilm(ids)
            finally:
                lstm.reset_states()  # nothing carries over to the next batch
        return out["activations"], out["mask"]

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        import torch

        activations, _ = self.layers(sentences)
        n_words = [len(s) for s in sentences]
        with torch.inference_mode():
            words = torch.cat([a.float() for a in activations], dim=-1)  # (B, T + 2, dim)
            pos = torch.arange(words.shape[1], device=words.device)
            n = torch.tensor(n_words, device=words.device).unsqueeze(1)
            # position k (1..n) holds word k - 1; <S>, </S> and padding belong to no word
            word_ids = torch.where((pos >= 1) & (pos <= n), pos - 1, torch.full_like(pos, -1))
            return pool_batch(words.unsqueeze(1), word_ids, n_words, spans)
