"""The ``local`` executor: every task in this process, one after the other, as submitted.

What ``ncprobe reproduce`` has always done: each run computes as soon as it comes up, with
its progress bar, and its results stay in memory for the report. By default it recomputes
finished runs (``--resume`` keeps them).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

from . import OnDone, Task, compute_task


class LocalExecutor:
    """Runs each task here, at once, in submission order (see :class:`~ncprobe.executors.
    Executor`). Errors other than a model that cannot be loaded propagate."""

    name: ClassVar[str] = "local"
    resume_default: ClassVar[bool] = False
    cli_options: ClassVar[Mapping[str, str]] = {}

    def __init__(self, *, on_event: Callable[[str], None] | None = None) -> None:
        self.on_event = on_event

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """No options of its own."""

    @classmethod
    def options_from_args(cls, args: argparse.Namespace) -> dict[str, Any]:
        """No options of its own."""
        return {}

    def prepare(self, *, results_dir: Path, cache_dir: Path | None) -> None:
        """Nothing to check beyond what the reproduction checks."""

    def assumed_device(self, model: str, lang: str, device: str | None) -> str | None:
        """The device given: the model runs here."""
        return device

    def submit(self, task: Task, done: OnDone) -> None:
        """Compute ``task`` now; ``done`` gets its outcome, with the results in memory."""
        results, outcome = compute_task(task)
        outcome.results = results
        done(outcome)

    def wait(self, done: OnDone) -> None:
        """Nothing is left: every task ran when it was submitted."""
