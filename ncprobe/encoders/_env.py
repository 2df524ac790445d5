"""What the machine offers a model: packages, devices, dtypes, the network, model paths.

The checks every model family shares, so that a model that cannot run here says why (what
to install, which device to pass) before anything is loaded, instead of failing with a
traceback later. Nothing here imports torch or transformers at module level.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator, Sequence, TypeVar

from ..errors import ModelUnavailableError, UsageError

T = TypeVar("T")

#: What to install for transformer models (HF encoders, decoder LLMs, sentence-transformers).
#: Torch first, then the extra: pasted as they come, the commands install a CPU torch (without
#: a torch already there, pip's default one on Linux is a CUDA build of several GB).
HF_INSTALL_HINT = ("install torch first, the CPU build where there is no GPU (pip install torch "
                   "--index-url https://download.pytorch.org/whl/cpu; with CUDA: "
                   "https://pytorch.org/get-started/locally/), then pip install 'ncprobe[hf]'")

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


def _silenced(factory, args, kwargs):
    """A tqdm hook of transformers (``set_tqdm_hook``): its bar, switched off."""
    return factory(*args, **{**kwargs, "disable": True})


@contextlib.contextmanager
def no_loading_bars() -> Iterator[None]:
    """transformers' own progress bars ("Loading weights" ...) off while a model loads:
    ncprobe shows its own progress, and a bar of the library's would be left on stderr
    among it. Downloads keep theirs (huggingface_hub draws them). Restored afterwards.

    transformers >= 5 takes a hook for the bars it draws; an older one has only its switch
    for every bar (downloads too), which is turned off meanwhile.
    """
    try:
        from transformers.utils import logging as tf_logging
    except ImportError:  # nothing to silence
        yield
        return
    hook = getattr(tf_logging, "set_tqdm_hook", None)
    if hook is not None:
        before = getattr(tf_logging, "_tqdm_hook", None)
        hook(_silenced)
        try:
            yield
        finally:
            hook(before)
        return
    was = tf_logging.is_progress_bar_enabled()
    tf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            tf_logging.enable_progress_bar()


def without_loading_bars(load: Callable[..., T]) -> Callable[..., T]:
    """``load`` (a model class or loading function), called under :func:`no_loading_bars`."""
    def call(*args, **kwargs) -> T:
        with no_loading_bars():
            return load(*args, **kwargs)
    return call
