"""Where the runs of a reproduction (:func:`ncprobe.ncimp.reproduce.reproduce`) compute:
here, or on a cluster.

A study sweep is many independent runs, one per model x language (and options): each a
computation (the :class:`Task`'s ``compute``, given by the caller) whose results directory
and embedding-cache entry are its own. The reproduction makes a :class:`Task` of each run
that can go ahead, hands it to an **executor**, and joins what comes back (an
:class:`Outcome` per task). The executor decides only where and when a task computes:

- ``local`` (:class:`~ncprobe.executors.local.LocalExecutor`): in this process, one task
  after the other, as soon as it is submitted;
- ``slurm`` (:class:`~ncprobe.executors.slurm.SlurmExecutor`): job arrays on a SLURM cluster,
  through submitit, with the resources :func:`resources_for` reads from the model registry.

Adding a backend (Ray, Dask ...) is one module with a class that satisfies :class:`Executor`
and one entry of :data:`EXECUTORS`; the command line picks its options up from the class
(:meth:`Executor.add_arguments`). Nothing else branches on the executor's name.
"""

from __future__ import annotations

import argparse
import importlib
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Protocol

from ..errors import ModelUnavailableError, NcprobeError, UsageError

if TYPE_CHECKING:
    from ..probes.base import ProbeResults

#: The executors by name: ``module:class``, imported only when used (submitit is optional).
EXECUTORS: dict[str, str] = {
    "local": "ncprobe.executors.local:LocalExecutor",
    "slurm": "ncprobe.executors.slurm:SlurmExecutor",
}


class RunsFailed(NcprobeError):
    """Some runs of a reproduction failed on the executor (a task that raised, was killed,
    timed out or vanished); the others were kept, and running the same command again
    resumes. The CLI exits 1 after drawing the report from the runs that finished."""

    exit_code = 1


class Terminated(NcprobeError):
    """The command was told to stop (SIGTERM) while it waited for its tasks on an executor;
    the tasks not finished were cancelled, the finished runs kept. The CLI exits 143, as a
    process killed by SIGTERM (128 + 15)."""

    exit_code = 143


@dataclass(frozen=True)
class Resources:
    """What one task asks a cluster for.

    Attributes:
        cpus: CPU cores (``--cpus-per-task``).
        mem: memory per node in SLURM's notation (``8G``, ``500M``; ``--mem``).
        time_min: wall-clock limit in minutes (``--time``).
        gpus: GPUs: a count, or ``TYPE:COUNT`` (``--gres=gpu:...``); ``"0"``: none.
    """

    cpus: int
    mem: str
    time_min: int
    gpus: str = "0"

    @property
    def wants_gpu(self) -> bool:
        """Whether it asks for at least one GPU."""
        return self.gpus.rsplit(":", 1)[-1] not in ("", "0")

    def describe(self) -> str:
        """``2 CPUs, 8G, 2:00:00`` (plus ``, GPU gpu:1``)."""
        hours, minutes = divmod(self.time_min, 60)
        text = f"{self.cpus} CPU{'s' if self.cpus != 1 else ''}, {self.mem}, " \
               f"{hours}:{minutes:02d}:00"
        return text + (f", GPU gpu:{self.gpus}" if self.wants_gpu else "")


#: Default resources per kind of model: static vectors are small and quick; transformers on
#: a CPU take a few GB and up to hours for the whole stimulus set; the registry's ``gpu``
#: models (billions of parameters) a GPU and the host memory to load them.
DEFAULT_RESOURCES: dict[str, Resources] = {
    "static": Resources(cpus=1, mem="4G", time_min=30),
    "openai": Resources(cpus=1, mem="2G", time_min=60),
    "cpu": Resources(cpus=2, mem="8G", time_min=120),
    "gpu": Resources(cpus=4, mem="64G", time_min=240, gpus="1"),
}


def resources_for(model: str, lang: str, device: str | None = None) -> Resources:
    """The resources one run of ``model`` asks for, from its registry entry.

    A model flagged ``gpu`` asks for a GPU (unless ``device`` is ``cpu``: then it runs on
    CPUs, with the GPU kind's memory and time); a ``static`` model or an ``openai`` one, the
    small defaults; any other model, and a name that is not an alias (a hub id, a model
    directory), the defaults of a transformer on CPUs. See :data:`DEFAULT_RESOURCES`.
    """
    from ..encoders.registry import MODELS

    spec = MODELS.get(model)
    if spec is not None and spec.gpu:
        gpu = DEFAULT_RESOURCES["gpu"]
        if device is not None and str(device).lower() == "cpu":
            return Resources(cpus=gpu.cpus, mem=gpu.mem, time_min=gpu.time_min * 2)
        return gpu
    if spec is not None and spec.family in ("static", "openai"):
        return DEFAULT_RESOURCES[spec.family]
    return DEFAULT_RESOURCES["cpu"]


@dataclass(frozen=True)
class Task:
    """One run of a reproduction: a computation of one config and where it writes.

    Attributes:
        index: its place in the reproduction (model-major, as the command lists them):
            outcomes are joined in this order whatever order they finish in.
        model, lang: as given.
        config: the run's config (NCIMP's :class:`~ncprobe.ncimp.config.RunConfig`).
        out: its results directory.
        data_dir, cache, cache_dir: passed to ``compute``.
        overwrite: passed to the results' ``to_parquet``.
        progress: a progress bar while encoding (only where a terminal watches).
        compute: what computes the run (given by the caller, keyword only), called as
            ``compute(config, data_dir=, cache=, cache_dir=, progress=)`` and returning
            results with a ``to_parquet`` (:class:`~ncprobe.probes.base.ProbeResults`);
            NCIMP's reproduction gives :func:`ncprobe.ncimp.reproduce._compute`. It travels
            to a cluster node by reference, so it must be a module-level function.
    """

    index: int
    model: str
    lang: str
    config: Any
    out: str
    data_dir: str | None = None
    cache: bool = True
    cache_dir: str | None = None
    overwrite: bool = False
    progress: bool = True
    compute: "Callable[..., ProbeResults]" = field(kw_only=True)

    @property
    def label(self) -> str:
        """``minilm (en)``: how messages name it."""
        return f"{self.model} ({self.lang})"


@dataclass
class Outcome:
    """What became of one :class:`Task`.

    Attributes:
        task: the task.
        status: ``ran`` (its results directory is written), ``resumed`` (found finished,
            not computed again), ``unavailable`` (the model could not be loaded where it ran:
            skipped, as when the registry says so), or ``failed`` (it raised, was killed or
            vanished; ``why`` and ``log`` say more).
        path: the results directory written (``ran``).
        results: the results in memory, when the task ran in this process; otherwise they
            are read from ``path``.
        why: what went wrong (``unavailable``, ``failed``).
        log: the task's log file, where there is one.
        where: the machine it ran on.
    """

    task: Task
    status: str
    path: str | None = None
    results: "ProbeResults | None" = None
    why: str = ""
    log: str | None = None
    where: str | None = None


def compute_task(task: Task) -> tuple["ProbeResults | None", Outcome]:
    """Run ``task`` here: compute (``task.compute``), write its results directory.

    Returns:
        ``(results, outcome)``: ``ran`` with the results, or ``unavailable`` (``None``) when
        loading the model says it cannot run here. Any other error propagates.
    """
    try:
        res = task.compute(task.config, data_dir=task.data_dir, cache=task.cache,
                           cache_dir=task.cache_dir, progress=task.progress)
    except ModelUnavailableError as e:
        return None, Outcome(task, "unavailable", why=str(e), where=socket.gethostname())
    out = res.to_parquet(task.out, overwrite=task.overwrite)
    return res, Outcome(task, "ran", path=str(out), where=socket.gethostname())


def run_task(task: Task) -> dict[str, Any]:
    """What a cluster task runs: :func:`compute_task`, its outcome as a small picklable
    dict (``status``, ``path``, ``why``, ``where``); the results stay in their directory."""
    _, outcome = compute_task(task)
    return {"status": outcome.status, "path": outcome.path, "why": outcome.why,
            "where": outcome.where}


#: Called with each :class:`Outcome` as the executor learns it.
OnDone = Callable[[Outcome], None]


class Executor(Protocol):
    """Runs :class:`Task` s somewhere and reports an :class:`Outcome` for each.

    :func:`~ncprobe.ncimp.reproduce.reproduce` calls :meth:`prepare` once before any task,
    :meth:`submit` for each task in order, then :meth:`wait`; ``done(outcome)`` must be
    called exactly once per task submitted, from :meth:`submit` or from :meth:`wait`.
    """

    #: the name ``--executor`` takes
    name: ClassVar[str]
    #: whether a reproduction keeps the runs already finished (a results directory of the
    #: same run) unless told otherwise (``resume``)
    resume_default: ClassVar[bool]
    #: constructor parameter -> command-line option (see :meth:`add_arguments`)
    cli_options: ClassVar[Mapping[str, str]]

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add this executor's options to ``ncprobe reproduce`` (default ``None`` each)."""

    @classmethod
    def options_from_args(cls, args: argparse.Namespace) -> dict[str, Any]:
        """The constructor options given on the command line (those not ``None``)."""

    def prepare(self, *, results_dir: Path, cache_dir: Path | None) -> None:
        """Check, before any work, what the tasks will need (refuse with a named error)."""

    def assumed_device(self, model: str, lang: str, device: str | None) -> str | None:
        """The device to assume when checking here whether ``model`` can run: ``device``,
        or the one the task will be given elsewhere (a cluster node's GPU)."""

    def submit(self, task: Task, done: OnDone) -> None:
        """Take one task (run it now, or queue it)."""

    def wait(self, done: OnDone) -> None:
        """Return once every task submitted has an outcome."""


def executor_names() -> list[str]:
    """The names ``--executor`` takes, in :data:`EXECUTORS` order."""
    return list(EXECUTORS)


def executor_class(name: str) -> "type[Executor]":
    """The class of executor ``name``.

    Raises:
        UsageError: no executor of that name.
    """
    where = EXECUTORS.get(name)
    if where is None:
        raise UsageError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
    module, _, cls = where.partition(":")
    return getattr(importlib.import_module(module), cls)


def make_executor(executor: "str | Executor", options: Mapping[str, Any] | None = None
                  ) -> "Executor":
    """An executor: ``executor`` itself when it is one, else the class of that name built
    with ``options``.

    Raises:
        UsageError: an unknown name, options given with an executor object, or options the
            executor does not take (named, with those it takes).
    """
    if not isinstance(executor, str):
        if options:
            raise UsageError("executor options go to the executor's constructor: give them "
                             "with an executor name, not with an executor object")
        return executor
    cls = executor_class(executor)
    options = dict(options or {})
    unknown = sorted(set(options) - set(cls.cli_options) - {"on_event"})
    if unknown:
        takes = ", ".join(cls.cli_options) or "none"
        raise UsageError(f"executor {executor!r} takes no option {', '.join(unknown)} "
                         f"(it takes: {takes})")
    return cls(**options)
