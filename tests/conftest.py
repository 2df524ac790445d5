"""Shared fixtures: the real NCIMP files (through $NCPROBE_DATA) and corrupted copies, the
tiny models, an embedding cache of the test's own."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import matplotlib
import pytest

from .data_dir import data_dir_verdict

# With pytest -n, each worker (and every process it starts: the README's commands, the
# notebooks' kernels) computes with its share of the cores. Left alone, torch starts one
# thread per core in every process, and two workers' threads wait on each other by spinning
# (OpenMP): the README test took 352 s beside the notebooks, 120 s alone. Set before
# anything imports torch; a value already set is kept.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS",
                          str(max(1, len(os.sched_getaffinity(0)) // _WORKERS)))

#: The test files that take longest on a 2-core machine (seconds, all their tests, measured
#: 2026-11-29 in a full run of 415 s; the SLURM file's earlier, with a cluster), run first:
#: with ``-n`` and ``--dist loadfile`` each file goes whole to one worker, in collection order
#: (``--no-loadscope-reorder``, setup.cfg), so the long ones start while the short ones fill
#: the gaps, instead of one long file starting last (that run's two workers ended 1.4 s apart).
#: Paths below tests/.
LONGEST_FIRST = ("test_readme.py",              # 95 s: the README's commands, in order
                 "test_notebooks.py",           # 156 s: every notebook, top to bottom
                 "executors/test_slurm.py",     # 76 s (2026-11-26): a real cluster's jobs
                 "ncc/test_probe.py",           # 30 s: NCC runs on the real items
                 "astitch/test_probe.py",       # 20 s: AStitch runs on the real uses
                 "ncimp/test_report.py", "plots/test_layers.py", "test_report_ownership.py",
                 "cli/test_probes_meet.py", "encoders/test_encoders.py", "ncimp/test_reproduce.py",
                 "cli/test_compare.py")
_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items) -> None:
    """The files of :data:`LONGEST_FIRST` first, in that order; the others as collected."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def where(item) -> str:
        path = Path(item.path).resolve()
        return path.relative_to(_TESTS).as_posix() if path.is_relative_to(_TESTS) else ""
    items.sort(key=lambda item: rank.get(where(item), len(rank)))

# One backend for the whole suite, chosen before any test module imports pyplot: figures are
# drawn off screen, the same on a desktop, a headless CI machine and an xdist worker.
matplotlib.use("Agg")


@pytest.fixture(scope="session")
def raw_dir() -> Path:
    """The read-only NCIMP files named by $NCPROBE_DATA (see :func:`data_dir_verdict`)."""
    verdict, value = data_dir_verdict(os.environ.get("NCPROBE_DATA"),
                                      ci=bool(os.environ.get("CI")))
    if verdict == "fail":
        pytest.fail(str(value), pytrace=False)
    if verdict == "skip":
        pytest.skip(str(value))
    return Path(value)


@pytest.fixture
def data_copy(raw_dir: Path, tmp_path: Path) -> Path:
    """A writable copy of the data directory, for tests that corrupt a file."""
    dst = tmp_path / "data"
    shutil.copytree(raw_dir, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


@pytest.fixture(scope="session")
def stimuli_all(raw_dir: Path):
    """Every stimulus of both languages, all contexts, all WordsSyn variants."""
    import warnings

    import ncprobe

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        return ncprobe.load_stimuli("all", contexts="all", wordssyn="all", data_dir=raw_dir)


@pytest.fixture
def own_cache(tmp_path, monkeypatch) -> Path:
    """An embedding cache of the test's own: fingerprints also write the per-file hash cache
    under the cache root, which must never be the user's."""
    root = tmp_path / "cache"
    monkeypatch.setenv("NCPROBE_CACHE", str(root))
    return root


# --- tiny models, built once per session (per xdist worker) ----------------------------------
# Every worker builds the same files (a fixed vocabulary, seeded weights: tests/tiny_models.py).
# Read only: a test that changes a model's files copies the directory first (shutil.copytree).

@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """The 3-layer BERT of :mod:`tests.tiny_models` (a WordPiece tokenizer of a fixed
    vocabulary)."""
    from .tiny_models import tiny_bert

    return tiny_bert(tmp_path_factory.mktemp("bert") / "tiny-bert")


@pytest.fixture(scope="session")
def tiny_st_dir(tiny_bert_dir: Path, tmp_path_factory) -> Path:
    """A sentence-transformers model on :func:`tiny_bert_dir`: mean pooling and a Dense layer."""
    from .tiny_models import make_st_dir

    return make_st_dir(tiny_bert_dir, tmp_path_factory.mktemp("st") / "tiny-st")


@pytest.fixture
def bert_dir(tiny_bert_dir: Path) -> Path:
    """:func:`tiny_bert_dir` (the session's: read-only, copy it before changing it)."""
    return tiny_bert_dir


@pytest.fixture
def st_dir(tiny_st_dir: Path) -> Path:
    """:func:`tiny_st_dir` (the session's: read-only, copy it before changing it)."""
    return tiny_st_dir


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    """The 3-layer LLaMA of :mod:`tests.tiny_models` (a tokenizer without a pad token)."""
    from .tiny_models import tiny_llama

    return tiny_llama(tmp_path_factory.mktemp("llama") / "tiny-llama")


@pytest.fixture(scope="session")
def tiny_byte_llama_dir(tmp_path_factory) -> Path:
    """The 2-layer LLaMA over a byte-level BPE of :mod:`tests.tiny_models` (letters " A".." D"
    and "A".."D" single tokens: it answers SemanticQA's items by letter probability)."""
    from .tiny_models import tiny_byte_llama

    return tiny_byte_llama(tmp_path_factory.mktemp("bytellama") / "byte-llama")
