"""The README's commands, run in the README's order as a new user runs them (issue 28).

A fresh checkout is an empty working directory beside a ``shared/`` that holds the data (a
link to the one the tests read), with ncprobe installed (as the README's install block
leaves it): every ``bash`` block runs in one shell session after the other (what one block
exports, the next sees), every ``python`` block in a fresh interpreter in the same
directory, each in the order the README gives them. Blocks that install, clone, need the
network, a cluster or a docs server are left out, each for a reason stated here; nothing
else is. Runs offline (``HF_HUB_OFFLINE``), with an embedding cache and user cache of its own.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: A block holding one of these is not run here, for the reason given.
NOT_RUN = {
    "git clone": "the checkout is the one under test",
    "pip install": "ncprobe and its extras are installed in the test environment",
    "python -m venv": "the test environment is the virtual environment",
    "ncprobe data download": "needs the network: the checkout beside shared/ sets NCPROBE_DATA",
    "--executor slurm": "needs a SLURM cluster (tests/executors/test_slurm.py runs one)",
    "mkdocs": "the docs build is CI's own step",
    "python -m pytest": "the test command itself",
}


def readme_blocks() -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced block of the README, in order."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^```(\w*)\n(.*?)^```", text, flags=re.M | re.S)]


def runnable(blocks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(lang, code) for lang, code in blocks if lang in ("bash", "python")
            and not any(k in code for k in NOT_RUN)]


def test_every_block_is_run_or_left_out_for_a_stated_reason() -> None:
    blocks = readme_blocks()
    langs = {lang for lang, _ in blocks}
    assert langs <= {"bash", "python", "bibtex"}, langs
    run = runnable(blocks)
    # the first-run sequence is run: the data, the default model, the report, the second
    # probe with the offline minilm, the Python API
    joined = "\n".join(code for _, code in run)
    for command in ("export NCPROBE_DATA=", "ncprobe compute", "ncprobe report results",
                    "ncprobe retrieve --model minilm", "import ncprobe"):
        assert command in joined, command


@pytest.mark.slow
def test_the_readme_commands_run_in_order_from_a_fresh_checkout(raw_dir, tmp_path) -> None:
    shared = raw_dir.parent.parent
    if raw_dir != shared / "ncimp" / "raw":
        pytest.skip(f"$NCPROBE_DATA ({raw_dir}) is not a shared/ncimp/raw as the README has it")
    checkout = tmp_path / "ncprobe"
    checkout.mkdir()
    (tmp_path / "shared").symlink_to(shared, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k != "NCPROBE_DATA"}
    env.update(NCPROBE_CACHE=str(tmp_path / "cache"), XDG_CACHE_HOME=str(tmp_path / "xdg"),
               HF_HUB_OFFLINE="1", MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    envfile = tmp_path / "env"
    for i, (lang, code) in enumerate(runnable(readme_blocks()), start=1):
        if lang == "bash":
            # the block, then what it left in the environment, for the next block
            script = f"set -euo pipefail\n{code}\nenv -0 > {envfile}\n"
            argv = ["bash", "-c", script]
        else:
            argv = [sys.executable, "-c", code]
        done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, (f"README block {i} ({lang}) exit {done.returncode}:\n"
                                      f"{code}\n--- stderr:\n{done.stderr[-3000:]}")
        if lang == "bash":
            env = dict(item.split("=", 1) for item in envfile.read_text().split("\0") if item)
    # what the sequence promises is there: the run, its report, the retrieval run and its
    # report, the Python example's report
    results = checkout / "results"
    assert (results / "glove-6b-50d-en" / "run.json").is_file()
    assert (results / "idiolink-val-minilm+bm25" / "run.json").is_file()
    for report in ("report", "report-idiolink", "report-glove"):
        assert (checkout / report / "README.md").is_file(), report
