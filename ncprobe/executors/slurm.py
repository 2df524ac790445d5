"""The ``slurm`` executor: the tasks of a reproduction as job arrays on a SLURM cluster.

Tasks are grouped by the resources they ask for (:func:`~ncprobe.executors.resources_for`,
with the ``--slurm-*`` overrides), and each group is submitted as one job array through
submitit (``AutoExecutor(cluster="slurm")``: named explicitly, because without ``srun`` on
``PATH`` submitit's automatic choice runs the jobs locally without a word). Each reproduction
gets a fresh submitit folder (``<results_dir>/slurm-logs/<time>-<random>/``), holding each
task's log: a cluster whose state directory was reset numbers its jobs from 1 again, and an
old folder's result files would be taken for the new jobs' results.

submitit learns a job's state from ``sacct``, which fails on a cluster without accounting:
every job then reads ``UNKNOWN`` and a job that died is waited for forever. So the jobs are
watched here instead (:func:`~ncprobe.executors.slurm_commands.decide`), from ``squeue``
(which shows finished jobs for ``MinJobAge``, 300 s by default) and the result file that
submitit writes when the function returns or raises: a task whose job ended, or left the
queue, without a result file is failed, with its log; one still running long past its time
limit is cancelled and failed; ``squeue`` failing for minutes stops the wait.

A request the cluster can never meet is the command line's error (exit 2, naming the
options): more CPUs or memory than any node of the partition has is refused before anything
is submitted (:func:`~ncprobe.executors.slurm_commands.fits`, from ``sinfo``); sbatch's own
refusal, and a job pending for a reason that no wait resolves
(:data:`~ncprobe.executors.slurm_commands.HOPELESS_REASONS`: ``PartitionConfig``,
``BadConstraints`` ...), cancel every job of the reproduction. So does anything else that stops
the wait: an error, Ctrl-C, or SIGTERM (exit 143). A SLURM client whose controller cannot be
reached (``scontrol ping``, or sbatch's "Unable to contact slurm controller") is said to be
that, before anything is written. What SLURM's commands are given and print is read and
written by :mod:`ncprobe.executors.slurm_commands`.

Each job runs in its log folder (``--chdir``), not in the directory it was submitted from:
a folder named ``ncprobe`` there would be imported instead of the package that submitted it.
The job calls :func:`~ncprobe.executors._guard.guarded_run` (sent as code), which checks that
the ``ncprobe`` it imports is the submitter's before it unpickles and runs the task; where the
submitter's package is not found without its working directory (``python -m ncprobe`` in an
uninstalled checkout), its parent is put first on the job's ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.machinery
import logging
import math
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Iterator, Mapping

from ..errors import MissingPackageError, NcprobeError, UsageError
from . import OnDone, Outcome, Resources, Task, Terminated, resources_for, run_task
from .slurm_commands import (
    ENDED_STATES,
    INTEGER_OPTIONS,
    NO_CONTROLLER,
    NodeSize,
    decide,
    fits,
    no_controller,
    nodes_of,
    parse_gpus,
    parse_mem,
    parse_sbatch_options,
    parse_squeue,
    parse_time,
    sbatch_message,
)
from .storage import check_storage

log = logging.getLogger(__name__)

#: how long ``squeue`` may keep failing (the controller down or unreachable) before the wait
#: stops with an error
SQUEUE_PATIENCE_S = 300.0
#: how long ``scontrol ping`` may take before it is left to sbatch to say whether the
#: controller answers (a missing slurm.conf makes every SLURM command retry for 60 s)
PING_TIMEOUT_S = 20.0
#: sbatch options that submitit's SLURM executor takes by name (others are passed verbatim)
_SUBMITIT_NAMED = frozenset({
    "account", "comment", "constraint", "cpus_per_gpu", "cpus_per_task", "dependency",
    "exclude", "exclusive", "gpus_per_node", "gpus_per_task", "job_name", "mail_type", "mail_user",
    "mem_per_cpu", "mem_per_gpu", "nodelist", "nodes", "ntasks_per_node", "qos", "wckey"})


@dataclass
class _Watch:
    """One submitted task and what the polls have seen of it."""

    task: Task
    job: Any  # submitit.slurm.slurm.SlurmJob
    resources: Resources
    ended_at: float | None = None
    running_at: float | None = None

    @property
    def log(self) -> str:
        return str(self.job.paths.stdout)


class SlurmExecutor:
    """Submits the tasks as SLURM job arrays (submitit) and watches them with ``squeue``.

    Args:
        partition: ``--partition`` (default: the cluster's default partition).
        gpus: GPUs per task, a count or ``TYPE:COUNT`` (``--gres=gpu:...``), for every task
            (default: from the registry: one for the models flagged ``gpu``, none otherwise).
        mem: memory per task, e.g. ``16G`` (default: from the registry).
        time: time limit per task, in SLURM's notation (default: from the registry).
        sbatch: further sbatch options, ``KEY=VALUE`` texts or a mapping
            (:func:`~ncprobe.executors.slurm_commands.parse_sbatch_options`).
        wait: stop waiting after this long (seconds, or SLURM's time notation): the tasks
            not finished by then are cancelled and failed (default: wait while they are in
            the queue).
        folder: the submitit folder, logs included (default: a fresh
            ``<results_dir>/slurm-logs/<time>-<random>``); it must not exist yet.
        poll_s: seconds between two looks at the queue.
        settle_s: how long a result file may take to appear after its job ended.
        on_event: called with a line for each submission and each task that ends (default:
            logged at INFO level).

    Raises:
        UsageError: an option of the wrong form (naming it and the form it takes).
    """

    name: ClassVar[str] = "slurm"
    resume_default: ClassVar[bool] = True
    cli_options: ClassVar[Mapping[str, str]] = {
        "partition": "--slurm-partition", "gpus": "--slurm-gpus", "mem": "--slurm-mem",
        "time": "--slurm-time", "sbatch": "--slurm-option", "wait": "--slurm-wait"}

    def __init__(self, *, partition: str | None = None, gpus: str | int | None = None,
                 mem: str | None = None, time: str | int | None = None,
                 sbatch: Iterable[str] | Mapping[str, Any] | None = None,
                 wait: float | str | None = None, folder: str | os.PathLike | None = None,
                 poll_s: float = 2.0, settle_s: float = 10.0,
                 on_event: Callable[[str], None] | None = None) -> None:
        if partition is not None and not re.fullmatch(r"[A-Za-z0-9_.,-]+", str(partition)):
            raise UsageError(f"--slurm-partition {partition!r}: give a partition name (or a "
                             "comma list of names) as sinfo shows them")
        self.partition = partition
        self.gpus = parse_gpus(gpus) if gpus is not None else None
        self.mem = parse_mem(mem) if mem is not None else None
        self.time_min = math.ceil(parse_time(str(time)) / 60) if time is not None else None
        self.sbatch = parse_sbatch_options(sbatch)
        if wait is None or isinstance(wait, (int, float)):
            if wait is not None and wait <= 0:
                raise UsageError(f"--slurm-wait {wait!r}: give a time above zero")
            self.wait_s = float(wait) if wait is not None else None
        else:
            self.wait_s = float(parse_time(wait, "--slurm-wait"))
        self.folder = Path(folder) if folder is not None else None
        self.poll_s, self.settle_s = poll_s, settle_s
        self.on_event = on_event
        self._queue: list[Task] = []
        self._squeue_error = ""  # the last error squeue printed

    # --- the command line ---------------------------------------------------------------------

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """``--slurm-partition``, ``--slurm-gpus``, ``--slurm-mem``, ``--slurm-time``,
        ``--slurm-option`` (repeated) and ``--slurm-wait``."""
        group = parser.add_argument_group(
            "--executor slurm", "resources per task; by default from the model registry: "
            "static vectors 1 CPU, 4G, 30 min; transformers 2 CPUs, 8G, 2 h; the models "
            "flagged GPU one GPU, 4 CPUs, 64G, 4 h")
        group.add_argument("--slurm-partition", metavar="NAME",
                           help="partition (default: the cluster's default)")
        group.add_argument("--slurm-gpus", metavar="N",
                           help="GPUs per task, N or TYPE:N (--gres=gpu:N; 0: none)")
        group.add_argument("--slurm-mem", metavar="SIZE", help="memory per task, e.g. 16G")
        group.add_argument("--slurm-time", metavar="TIME",
                           help="time limit per task, e.g. 90 (minutes), 2:00:00, 1-12")
        group.add_argument("--slurm-option", metavar="KEY=VALUE", action="append",
                           help="any other sbatch option, e.g. account=proj42 or "
                           "constraint=a100 (repeat it for several)")
        group.add_argument("--slurm-wait", metavar="TIME",
                           help="stop waiting after TIME: the tasks still queued or running "
                           "are cancelled and reported (default: wait while they are queued)")

    @classmethod
    def options_from_args(cls, args: argparse.Namespace) -> dict[str, Any]:
        """The ``--slurm-*`` options given (constructor parameter -> value)."""
        given = {"partition": args.slurm_partition, "gpus": args.slurm_gpus,
                 "mem": args.slurm_mem, "time": args.slurm_time, "sbatch": args.slurm_option,
                 "wait": args.slurm_wait}
        return {k: v for k, v in given.items() if v is not None}

    # --- the executor -------------------------------------------------------------------------

    def resources(self, task: Task) -> Resources:
        """What ``task`` asks for: the registry's resources with this executor's overrides."""
        res = resources_for(task.model, task.lang, task.config.device)
        if self.gpus is not None:
            res = replace(res, gpus=self.gpus)
        if self.mem is not None:
            res = replace(res, mem=self.mem)
        if self.time_min is not None:
            res = replace(res, time_min=self.time_min)
        if "cpus_per_task" in self.sbatch:
            res = replace(res, cpus=int(self.sbatch["cpus_per_task"]))
        return res

    def parameters(self, res: Resources) -> dict[str, Any]:
        """The submitit parameters (``AutoExecutor.update_parameters``) of one array."""
        params: dict[str, Any] = {"name": "ncprobe", "timeout_min": res.time_min,
                                  "cpus_per_task": res.cpus, "slurm_mem": res.mem,
                                  "slurm_stderr_to_stdout": True}
        if res.wants_gpu:
            params["slurm_gres"] = f"gpu:{res.gpus}"
        if self.partition is not None:
            params["slurm_partition"] = self.partition
        extra = {}
        for key, value in self.sbatch.items():
            if key == "cpus_per_task":
                continue  # in res.cpus
            if key in _SUBMITIT_NAMED:
                params[f"slurm_{key}"] = int(value) if key in INTEGER_OPTIONS else value
            else:
                extra[key.replace("_", "-")] = value
        if self.folder is not None:  # never the submitting directory (see the module doc)
            extra["chdir"] = str(self.folder)
        if extra:
            params["slurm_additional_parameters"] = extra
        setup = _job_setup()
        if setup:
            params["slurm_setup"] = setup
        return params

    def assumed_device(self, model: str, lang: str, device: str | None) -> str | None:
        """The task's node has a GPU when the task asks for one: the model's availability is
        not judged by this machine's GPU (``cuda`` then), only by the rest."""
        if device is not None:
            return device
        res = resources_for(model, lang, None)
        if self.gpus is not None:
            res = replace(res, gpus=self.gpus)
        return "cuda" if res.wants_gpu else None

    def prepare(self, *, results_dir: Path, cache_dir: Path | None) -> None:
        """Refuse, before any work, a machine that cannot submit (no submitit, no ``sbatch``,
        ``squeue`` or ``srun`` on ``PATH``, or a controller that does not answer
        ``scontrol ping``) and storage whose locks fail; warn about storage whose locks stay
        on each node, or that other nodes cannot see
        (:func:`~ncprobe.executors.storage.check_storage`). Nothing is written.

        Raises:
            MissingPackageError: submitit is not installed.
            UsageError: no SLURM commands here, or no controller answering them.
            OutputError: locking fails in the results directory or the cache.
        """
        try:
            import submitit  # noqa: F401
        except ImportError:
            raise MissingPackageError(
                "--executor slurm needs submitit, which is not installed: pip install "
                "'ncprobe[slurm]'") from None
        missing = [c for c in ("sbatch", "squeue", "srun", "scancel") if shutil.which(c) is None]
        if missing:
            raise UsageError(f"--executor slurm: {', '.join(missing)} not found on PATH; run "
                             "ncprobe on a machine that submits to the cluster (a login "
                             "node), or use --executor local")
        self._ping()
        nodes = self._nodes()
        for what, path in (("results directory", results_dir), ("embedding cache", cache_dir)):
            if path is not None:
                warning = check_storage(what, path, nodes=nodes)
                if warning:
                    log.warning("%s", warning)
        base = Path(results_dir).expanduser().resolve() / "slurm-logs"
        self.folder = Path(self.folder).expanduser().resolve() if self.folder is not None \
            else base / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        if self.folder.exists():
            raise UsageError(f"{self.folder}: the submitit folder exists already; each "
                             "reproduction needs a fresh one (an old one's result files would "
                             "be taken for the new jobs')")

    def _ping(self) -> None:
        """Refuse a SLURM client whose controller does not answer ``scontrol ping`` (skipped
        where there is no ``scontrol``, or it does not answer in :data:`PING_TIMEOUT_S`:
        sbatch's error then says it)."""
        if shutil.which("scontrol") is None:
            return
        try:
            out = subprocess.run(["scontrol", "ping"], capture_output=True, text=True,
                                 timeout=PING_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("scontrol ping did not answer within %.0f s; submitting anyway",
                        PING_TIMEOUT_S)
            return
        except OSError as e:
            log.warning("scontrol ping failed: %s; submitting anyway", e)
            return
        # "Slurmctld(primary) at head is UP" (one line per controller, backups included):
        # one controller up is enough
        if out.returncode == 0 or re.search(r"\bis UP\b", out.stdout):
            return
        said = [ln.strip() for ln in (out.stdout + "\n" + out.stderr).splitlines()
                if ln.strip() and not ln.strip().startswith("*")]
        raise no_controller("scontrol ping: " + ("; ".join(said) or
                                                 f"exit {out.returncode}"))

    def _nodes(self) -> int | None:
        """How many nodes the tasks may land on (``sinfo``), None when it cannot say."""
        cmd = ["sinfo", "-h", "-o", "%D"] + (["-p", self.partition] if self.partition else [])
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True)
            return sum(int(x) for x in out.stdout.split())
        except (OSError, subprocess.SubprocessError, ValueError):
            return None

    def submit(self, task: Task, done: OnDone) -> None:
        """Queue ``task``: the tasks are submitted together by :meth:`wait`."""
        self._queue.append(task)

    def _say(self, line: str) -> None:
        if self.on_event is not None:
            self.on_event(line)
        else:
            log.info("%s", line)

    def _remote(self, task: Task) -> Task:
        """``task`` as a node runs it: the data, the cache and the results directory as
        this machine resolves them, as absolute paths (a node's working directory and
        environment may differ), and no progress bar."""
        from .._io import cache_root
        from ..data.sources import resolve_data_dir

        def absolute(p) -> str:
            return str(Path(p).expanduser().resolve())
        return replace(task, out=absolute(task.out),
                       data_dir=absolute(resolve_data_dir(task.data_dir)),
                       cache_dir=absolute(cache_root(task.cache_dir)) if task.cache else None,
                       progress=False)

    def wait(self, done: OnDone) -> None:
        """Submit the queued tasks, one job array per set of resources, and wait until each
        has an outcome. Whatever stops the wait early (an error, a request the cluster can
        never meet, Ctrl-C, SIGTERM) cancels the jobs not finished yet; a submission that
        fails before any job is queued leaves no log folder behind.

        Raises:
            UsageError: a request no node of the partition can meet (before anything is
                submitted), sbatch refused a submission, a job is pending for a reason no
                wait resolves
                (:data:`~ncprobe.executors.slurm_commands.HOPELESS_REASONS`), or the
                controller cannot be reached.
            Terminated: SIGTERM while waiting.
            NcprobeError: ``squeue`` kept failing for :data:`SQUEUE_PATIENCE_S` seconds.
        """
        tasks, self._queue = self._queue, []
        if not tasks:
            return
        assert self.folder is not None, "prepare() first"
        groups: dict[Resources, list[Task]] = {}
        for task in tasks:
            groups.setdefault(self.resources(task), []).append(task)
        self._check_fits(groups)  # exit 2 before anything is written or submitted
        made = [d for d in (self.folder, *self.folder.parents) if not d.exists()]
        self.folder.mkdir(parents=True, exist_ok=True)
        watches: list[_Watch] = []
        with _stop_on_sigterm():
            try:
                self._submit(groups, watches)
            except BaseException as e:
                self._cancel([w.job.job_id for w in watches])
                if not watches:  # nothing queued: nothing to keep a log of
                    _remove_made(self.folder, made)
                stopped = self._stopped(e)
                if stopped is e:
                    raise
                raise stopped from (None if isinstance(e, _Stop) else e)
            try:
                self._watch(watches, done)
            except BaseException as e:
                self._cancel([w.job.job_id for w in watches if not _has_result(w)])
                stopped = self._stopped(e)
                if stopped is e:
                    raise
                raise stopped from (None if isinstance(e, _Stop) else e)

    def _stopped(self, err: BaseException) -> BaseException:
        """What to raise once the jobs are cancelled after ``err`` stopped the wait: sbatch's
        refusal (submitit's or subprocess's error) as a :class:`UsageError` saying why,
        SIGTERM as :class:`Terminated`, anything else as it is."""
        if isinstance(err, _Stop):
            return Terminated("stopped by SIGTERM while waiting for the SLURM jobs; the jobs "
                              "not finished were cancelled. Run the same command again to "
                              "compute them: the runs that finished are kept")
        if isinstance(err, NcprobeError) or not isinstance(err, Exception):
            return err
        said = sbatch_message(err)
        if NO_CONTROLLER.search(str(err)):
            return no_controller(f"sbatch: {said}")
        return UsageError(f"sbatch refused the jobs: {said} (check --slurm-partition, "
                          "--slurm-gpus, --slurm-mem, --slurm-time and --slurm-option against "
                          "what the cluster offers: sinfo)")

    def _submit(self, groups: Mapping[Resources, list[Task]], watches: list[_Watch]) -> None:
        """One job array per group, each job's :class:`_Watch` appended to ``watches`` as
        soon as it is queued (so that a later failure cancels it)."""
        import submitit

        assert self.folder is not None
        call, expected = _job_function()
        for res, members in groups.items():
            ex = submitit.AutoExecutor(folder=self.folder / "%j", cluster="slurm")
            ex.update_parameters(**self.parameters(res))
            remote = [self._remote(t) for t in members]
            if expected is None:
                jobs = ex.map_array(run_task, remote)
            else:
                import cloudpickle

                jobs = ex.map_array(call, [expected] * len(remote),
                                    [cloudpickle.dumps(t) for t in remote])
            for task, job in zip(members, jobs, strict=True):
                watches.append(_Watch(task, job, res))
                self._say(f"slurm: {task.label}: job {job.job_id} ({res.describe()}), log "
                          f"{job.paths.stdout}")

    def asked(self) -> str:
        """The ``--slurm-*`` options that shape each request, as given (for messages)."""
        given = []
        if self.partition is not None:
            given.append(f"--slurm-partition {self.partition}")
        if self.gpus is not None:
            given.append(f"--slurm-gpus {self.gpus}")
        if self.mem is not None:
            given.append(f"--slurm-mem {self.mem}")
        if self.time_min is not None:
            given.append(f"--slurm-time {self.time_min}")
        for key, value in self.sbatch.items():
            flag = key.replace("_", "-")
            given.append(f"--slurm-option {flag}" + ("" if value is True else f"={value}"))
        return ("asked with " + ", ".join(given)) if given else \
            "asked with the registry's defaults (no --slurm-* option given)"

    def _check_fits(self, groups: Mapping[Resources, list[Task]]) -> None:
        """Refuse a group asking for more CPUs or memory than any node of the partition has
        (``sinfo``; every node counts, down or not: one may come back). Nothing is checked
        where sinfo does not answer: squeue's reason says it then."""
        nodes = self._node_sizes()
        if not nodes:
            return
        where = f"partition {self.partition}" if self.partition else "the default partition"
        for res, members in groups.items():
            problem = fits(res, nodes)
            if problem is None:
                continue
            labels = ", ".join(t.label for t in members)
            if problem == "cpus":
                most = max(n.cpus for n in nodes)
                option = (f"--slurm-option cpus-per-task={res.cpus}" if "cpus_per_task" in
                          self.sbatch else f"the default of {res.cpus} CPUs per task for "
                          f"{labels} (--slurm-option cpus-per-task=N sets it)")
                raise UsageError(f"{option}: no node of {where} has {res.cpus} CPUs (the "
                                 f"most: {most}; sinfo -N -o '%N %P %c %m'); ask for at most "
                                 f"{most}. Nothing was submitted")
            most_mb = max(n.mem_mb for n in nodes if n.cpus >= res.cpus)
            option = (f"--slurm-mem {res.mem}" if self.mem is not None else
                      f"the default of {res.mem} per task for {labels} (--slurm-mem sets it)")
            raise UsageError(f"{option}: no node of {where} with {res.cpus} CPUs has that "
                             f"much memory (the most: {most_mb}M; sinfo -N -o '%N %P %c %m'); "
                             f"ask for at most {most_mb}M. Nothing was submitted")

    def _node_sizes(self) -> list[NodeSize] | None:
        """The nodes the jobs may land on, from ``sinfo`` (those of ``--slurm-partition``,
        else of the default partition), or None when sinfo cannot say."""
        cmd = ["sinfo", "-h", "-N", "-o", "%N|%P|%c|%m"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return nodes_of(out.stdout, self.partition)

    def _watch(self, watches: list[_Watch], done: OnDone) -> None:
        pending = list(watches)
        started = time.monotonic()
        squeue_failing_since: float | None = None
        while pending:
            now = time.monotonic()
            ids = sorted({w.job.job_id.split("_")[0] for w in pending})
            listed = self._squeue(ids)
            if listed is None:
                squeue_failing_since = squeue_failing_since or now
                if now - squeue_failing_since > SQUEUE_PATIENCE_S:
                    why = ("the SLURM controller (slurmctld) cannot be contacted" if
                           NO_CONTROLLER.search(self._squeue_error) else "see the warnings "
                           "above")
                    raise NcprobeError(
                        f"squeue has failed for {SQUEUE_PATIENCE_S / 60:.0f} min ({why}); "
                        f"stopped waiting for jobs {', '.join(ids)}, which are cancelled "
                        "where the controller answers. Run the same command again once the "
                        "cluster answers: finished runs are kept")
                time.sleep(self.poll_s)
                continue
            squeue_failing_since = None
            still = []
            for w in pending:
                state, reason = listed.get(w.job.job_id, (None, ""))
                if state == "RUNNING" and w.running_at is None:
                    w.running_at = now
                ended = state is None or state in ENDED_STATES
                if ended and w.ended_at is None:
                    w.ended_at = now
                elif not ended:
                    w.ended_at = None  # requeued: running or pending again
                decision = decide(
                    state, reason, has_result=_has_result(w),
                    ended_for=now - w.ended_at if w.ended_at is not None else 0.0,
                    running_for=now - w.running_at if w.running_at is not None else 0.0,
                    limit_s=w.resources.time_min * 60.0, settle_s=self.settle_s)
                if decision.action == "wait":
                    still.append(w)
                    continue
                if decision.action == "impossible":  # wait() cancels every job left
                    raise UsageError(
                        f"job {w.job.job_id} ({w.task.label}: {w.resources.describe()}) "
                        f"{decision.why}; {self.asked()}. Compare with what the cluster "
                        "offers (sinfo -N -o '%N %P %c %m %G %f'), change the option and run "
                        "the same command again: the runs that finished are kept, the jobs "
                        "not finished are cancelled")
                if decision.cancel:
                    self._cancel([w.job.job_id])
                outcome = self._outcome(w) if decision.action == "result" else \
                    Outcome(w.task, "failed", why=f"job {w.job.job_id} {decision.why}",
                            log=w.log)
                self._report(outcome, w)
                done(outcome)
            pending = still
            if pending and self.wait_s is not None and now - started > self.wait_s:
                self._cancel([w.job.job_id for w in pending])
                for w in pending:
                    outcome = Outcome(w.task, "failed", log=w.log,
                                      why=f"job {w.job.job_id} not finished within "
                                      f"--slurm-wait ({self.wait_s:.0f} s); cancelled")
                    self._report(outcome, w)
                    done(outcome)
                return
            if pending:
                time.sleep(self.poll_s)

    def _report(self, outcome: Outcome, w: _Watch) -> None:
        if outcome.status == "ran":
            self._say(f"slurm: {w.task.label} finished (job {w.job.job_id} on "
                      f"{outcome.where or '?'})")
        elif outcome.status == "failed":
            self._say(f"slurm: {w.task.label} failed: {outcome.why}")

    def _outcome(self, w: _Watch) -> Outcome:
        """The outcome a task's result file holds."""
        from submitit.core.utils import pickle_load

        try:
            kind, value = pickle_load(w.job.paths.result_pickle)
        except Exception as e:  # noqa: BLE001 - a result file cut short or unreadable
            return Outcome(w.task, "failed", log=w.log,
                           why=f"job {w.job.job_id}: its result file cannot be read ({e})")
        if kind != "success":
            last = [ln for ln in str(value).strip().splitlines() if ln.strip()]
            return Outcome(w.task, "failed", log=w.log,
                           why=f"job {w.job.job_id} raised {last[-1] if last else 'an error'}")
        path, where = value.get("path"), value.get("where")
        if value.get("status") == "unavailable":
            return Outcome(w.task, "unavailable", why=value.get("why", ""), where=where,
                           log=w.log)
        if not path or not Path(path).is_dir():
            return Outcome(w.task, "failed", log=w.log, where=where,
                           why=f"job {w.job.job_id} wrote {path} on {where}, which this "
                           "machine cannot see: put --results-dir on storage every node "
                           "mounts")
        return Outcome(w.task, "ran", path=path, where=where, log=w.log)

    def _squeue(self, array_ids: list[str]) -> dict[str, tuple[str, str]] | None:
        """The jobs' states, or None when squeue fails (a warning says why). A job the
        controller no longer knows is simply not listed."""
        cmd = ["squeue", "-h", "-r", "-t", "all", "-j", ",".join(array_ids), "-o", "%i|%T|%r"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            log.warning("squeue failed: %s", e)
            return None
        if out.returncode != 0:
            if "Invalid job id" in out.stderr:  # none of them is known any more
                return {}
            self._squeue_error = out.stderr
            log.warning("squeue failed (exit %d): %s", out.returncode, out.stderr.strip())
            return None
        return parse_squeue(out.stdout)

    def _cancel(self, job_ids: list[str]) -> None:
        if not job_ids:
            return
        self._say(f"slurm: cancelling job(s) {', '.join(job_ids)}")
        try:
            subprocess.run(["scancel", *job_ids], capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            log.warning("scancel %s failed: %s", " ".join(job_ids), e)


def _has_result(w: _Watch) -> bool:
    """Whether the task's result file is there. The folder is listed rather than the file
    looked up: on NFS a listing revalidates the directory, where a lookup may be answered
    from the client's cache of a name that was missing a moment ago."""
    folder = w.job.paths.result_pickle.parent
    try:
        return w.job.paths.result_pickle.name in os.listdir(folder)
    except OSError:
        return False


# --- stopping ----------------------------------------------------------------------------------

class _Stop(BaseException):
    """SIGTERM arrived while waiting: a BaseException, so that no ``except Exception`` on the
    way swallows it before the jobs are cancelled."""


@contextlib.contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    """While in the block, SIGTERM raises :class:`_Stop` (once: a second SIGTERM while the
    jobs are being cancelled is ignored); the previous handler is restored after. Left as it
    is outside the main thread (where Python cannot set handlers) and where SIGTERM is
    ignored (``nohup``, a caller's choice)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        yield
        return
    stopping = False

    def handler(signum, frame) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise _Stop()
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _remove_made(folder: Path, made: list[Path]) -> None:
    """Remove the log folder a failed submission made (submitit's job script and pickle
    only: no job was queued), and those of its parents this run made, if left empty."""
    shutil.rmtree(folder, ignore_errors=True)
    for d in made:  # deepest first
        if d == folder:
            continue
        try:
            d.rmdir()
        except OSError:  # not empty (another run's logs): keep it, and its parents
            break


# --- which ncprobe a job runs ------------------------------------------------------------------

def _ncprobe_file() -> str:
    """This process's ``ncprobe/__init__.py`` (that of the package this module is part of),
    resolved; the package root is not imported for it."""
    return os.path.realpath(Path(__file__).resolve().parents[1] / "__init__.py")


def _job_function() -> tuple[Callable[..., Any], str | None]:
    """What each job calls: :func:`~ncprobe.executors._guard.guarded_run`, sent as code
    (cloudpickle by value) with the submitter's ``ncprobe/__init__.py``; or, with a
    cloudpickle too old to send a module by value, :func:`run_task` and None."""
    import cloudpickle

    from . import _guard

    register = getattr(cloudpickle, "register_pickle_by_value", None)
    if register is None:  # cloudpickle < 2.0
        return run_task, None
    register(_guard)
    return _guard.guarded_run, _ncprobe_file()


def found_without_cwd(expected: str, path: list[str] | None = None,
                      meta_path: list[Any] | None = None) -> bool:
    """Whether a Python like this one, started elsewhere, imports the ``ncprobe`` at
    ``expected``: the import system's finders asked for ``ncprobe`` as they would be, with
    ``sys.path`` less its first entry (this process's working directory or script folder, a
    job's own working directory there) and its relative entries."""
    path = list(sys.path if path is None else path)
    if not (getattr(sys.flags, "safe_path", False) or sys.flags.isolated):
        path = path[1:]
    path = [p for p in path if os.path.isabs(p)]
    for finder in (sys.meta_path if meta_path is None else meta_path):
        try:
            if finder is importlib.machinery.PathFinder:
                spec = finder.find_spec("ncprobe", path)
            else:
                find = getattr(finder, "find_spec", None)
                spec = find("ncprobe", None) if find is not None else None
        except Exception:  # noqa: BLE001 - a third-party finder's trouble: ask the next
            continue
        if spec is not None:
            return spec.origin is not None and os.path.exists(spec.origin) and \
                os.path.realpath(spec.origin) == expected
    return False


def _job_setup() -> list[str]:
    """The job script's lines before the job's Python starts: put the submitter's package's
    parent first on ``PYTHONPATH`` when the job would not find that package otherwise
    (``python -m ncprobe`` in an uninstalled checkout); nothing when it would (an installed
    package: its site-packages put first could shadow the standard library)."""
    expected = _ncprobe_file()
    if found_without_cwd(expected):
        return []
    parent = shlex.quote(str(Path(expected).parent.parent))
    return [f"export PYTHONPATH={parent}${{PYTHONPATH:+:$PYTHONPATH}}"]
