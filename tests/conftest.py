"""Shared fixtures: the real NCIMP files (through $NCPROBE_DATA) and corrupted copies."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _raw_dir() -> Path | None:
    env = os.environ.get("NCPROBE_DATA")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "ncimp" / "raw"]:
        if (cand / "marcospln+nctti").is_dir():
            return cand.resolve()
    return None


@pytest.fixture(scope="session")
def raw_dir() -> Path:
    """The read-only NCIMP files; in CI a missing copy is an error, not a skip."""
    d = _raw_dir()
    if d is None:
        if os.environ.get("CI"):
            pytest.fail("NCPROBE_DATA does not point at the NCIMP files (../shared/ncimp/raw)")
        pytest.skip("NCIMP files not available: set NCPROBE_DATA")
    return d


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
