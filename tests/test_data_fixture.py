"""The data fixture: a wrong $NCPROBE_DATA fails the data tests; only an unset one skips them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ncprobe.data import sources

from .data_dir import data_dir_verdict

REPO = Path(__file__).resolve().parents[1]
REQUIRED = [f for f in sources.upstream_files() if f.need == "required"]


def test_unset_variable_skips_and_says_how_to_get_the_data() -> None:
    verdict, reason = data_dir_verdict(None)
    assert verdict == "skip"
    assert "ncprobe data download" in reason
    assert str(sources.default_data_dir()) in reason  # where the download puts the files
    assert "NCPROBE_DATA=" in reason and "python -m pytest" in reason


def test_unset_variable_in_ci_fails() -> None:
    assert data_dir_verdict(None, ci=True)[0] == "fail"


def test_missing_directory_fails_naming_it(tmp_path: Path) -> None:
    verdict, message = data_dir_verdict(str(tmp_path / "nowhere"))
    assert verdict == "fail"
    assert str(tmp_path / "nowhere") in message and "not a directory" in message


def test_empty_directory_fails_naming_every_required_file(tmp_path: Path) -> None:
    verdict, message = data_dir_verdict(str(tmp_path))
    assert verdict == "fail"
    assert f"{len(REQUIRED)} required file(s) missing" in message
    for f in REQUIRED:
        assert f.local_path in message


def _copy(raw_dir: Path, dst: Path) -> Path:
    shutil.copytree(raw_dir, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def test_one_missing_or_changed_file_fails(raw_dir: Path, tmp_path: Path) -> None:
    copy = _copy(raw_dir, tmp_path / "copy")
    assert data_dir_verdict(str(copy)) == ("use", copy.resolve())
    gone, edited = REQUIRED[0], REQUIRED[1]
    (copy / gone.local_path).unlink()
    target = copy / edited.local_path
    target.write_bytes(target.read_bytes() + b"\n")
    verdict, message = data_dir_verdict(str(copy))
    assert verdict == "fail"
    assert f"1 required file(s) missing: {gone.local_path}" in message
    assert f"1 file(s) differ from their pinned git blob id: {edited.local_path}" in message


def _pytest(env_data: str | None) -> subprocess.CompletedProcess:
    """Run one data test in a fresh pytest with NCPROBE_DATA set to ``env_data`` (or unset)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NCPROBE_DATA", "CI") and not k.startswith("PYTEST_")}
    if env_data is not None:
        env["NCPROBE_DATA"] = env_data
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/data/test_sources.py::test_every_bundled_file_verifies"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_readme_test_command_fails_when_the_data_is_not_there(tmp_path: Path) -> None:
    """The README's command with ../shared absent: the run fails instead of skipping."""
    run = _pytest(str(tmp_path / "shared" / "ncimp" / "raw"))
    assert run.returncode == 1, run.stdout
    assert "1 error" in run.stdout and "not a directory" in run.stdout
    run = _pytest(None)
    assert run.returncode == 0, run.stdout
    assert "1 skipped" in run.stdout and "ncprobe data download" in run.stdout
