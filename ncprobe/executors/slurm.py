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
watched here instead (:func:`decide`), from ``squeue`` (which shows finished jobs for
``MinJobAge``, 300 s by default) and the result file that submitit writes when the function
returns or raises: a task whose job ended, or left the queue, without a result file is
failed, with its log; one still running long past its time limit, or held for a reason that
no wait resolves, is cancelled and failed; ``squeue`` failing for minutes stops the wait.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Mapping

from ..errors import MissingPackageError, NcprobeError, UsageError
from . import OnDone, Outcome, Resources, Task, resources_for, run_task
from .storage import check_storage

log = logging.getLogger(__name__)

#: job states after which nothing more happens (squeue's long names, ``%T``)
ENDED_STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT"})
#: reasons a pending job waits for what no wait brings (an administrator must change
#: something): such a task is cancelled and failed
HOPELESS_REASONS = frozenset({
    "BadConstraints", "DependencyNeverSatisfied", "InvalidAccount", "InvalidQOS",
    "PartitionNodeLimit", "PartitionTimeLimit"})
#: how long a running job may outlive its time limit before it is taken for lost (SLURM
#: kills it at the limit, plus KillWait and the signal delay)
OVERRUN_S = 600.0
#: how long ``squeue`` may keep failing (the controller down or unreachable) before the wait
#: stops with an error
SQUEUE_PATIENCE_S = 300.0

#: sbatch options that ncprobe or submitit set themselves: not to be given
_RESERVED = {"array": "ncprobe submits each group of tasks as one array",
             "output": "submitit names each task's log", "error": "submitit names each "
             "task's log", "open_mode": "submitit appends to each task's log",
             "signal": "submitit asks for the signal before the time limit",
             "wrap": "submitit writes the job script"}
#: sbatch options that have an option of their own
_DEDICATED = {"partition": "--slurm-partition", "time": "--slurm-time", "mem": "--slurm-mem",
              "gres": "--slurm-gpus", "gpus": "--slurm-gpus"}
#: sbatch options that submitit's SLURM executor takes by name (others are passed verbatim)
_SUBMITIT_NAMED = frozenset({
    "account", "comment", "constraint", "cpus_per_gpu", "cpus_per_task", "dependency",
    "exclude", "exclusive", "gpus_per_node", "gpus_per_task", "job_name", "mail_type", "mail_user",
    "mem_per_cpu", "mem_per_gpu", "nodelist", "nodes", "ntasks_per_node", "qos", "wckey"})
_INTEGER = frozenset({"cpus_per_task", "cpus_per_gpu", "gpus_per_node", "gpus_per_task",
                      "nodes", "ntasks_per_node"})

_TIME_FORMS = [  # SLURM's time formats (sbatch --time), as (pattern, field names)
    (r"(\d+)", ("m",)), (r"(\d+):(\d+)", ("m", "s")), (r"(\d+):(\d+):(\d+)", ("h", "m", "s")),
    (r"(\d+)-(\d+)", ("d", "h")), (r"(\d+)-(\d+):(\d+)", ("d", "h", "m")),
    (r"(\d+)-(\d+):(\d+):(\d+)", ("d", "h", "m", "s"))]
_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_time(text: str, option: str = "--slurm-time") -> int:
    """A SLURM time limit (``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``,
    ``days-hours``, ``days-hours:minutes``, ``days-hours:minutes:seconds``) in seconds.

    Raises:
        UsageError: another form, or zero (naming ``option``).
    """
    for pattern, names in _TIME_FORMS:
        m = re.fullmatch(pattern, str(text).strip())
        if m:
            seconds = sum(int(v) * _SECONDS[n] for v, n in zip(m.groups(), names, strict=True))
            if seconds > 0:
                return seconds
            break
    raise UsageError(f"{option} {text!r}: give a time limit above zero as SLURM writes it: "
                     "MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, "
                     "DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS (e.g. 90, 2:00:00, "
                     "1-12)")


def parse_mem(text: str, option: str = "--slurm-mem") -> str:
    """Memory per node as sbatch's ``--mem`` takes it: a whole number with an optional unit
    ``K``, ``M`` (the default), ``G`` or ``T``; returned upper-case (``16g`` -> ``16G``).

    Raises:
        UsageError: another form, or zero.
    """
    m = re.fullmatch(r"(\d+)([KMGT]?)B?", str(text).strip().upper())
    if not m or int(m.group(1)) == 0:
        raise UsageError(f"{option} {text!r}: give the memory per node as a whole number "
                         "above zero with an optional unit K, M (the default), G or T, e.g. "
                         "16G or 500M")
    return f"{int(m.group(1))}{m.group(2)}"


def parse_gpus(text: str | int, option: str = "--slurm-gpus") -> str:
    """GPUs per task: a count (``0``: none) or ``TYPE:COUNT`` (``a100:1``), as
    ``--gres=gpu:...`` takes it.

    Raises:
        UsageError: another form.
    """
    value = str(text).strip()
    if re.fullmatch(r"\d+", value):
        return str(int(value))
    if re.fullmatch(r"[A-Za-z0-9_.-]+:\d+", value):
        return value
    raise UsageError(f"{option} {text!r}: give a number of GPUs (0: none) or TYPE:NUMBER "
                     "as the cluster names its GPUs (e.g. 1 or a100:2)")


def parse_sbatch_options(given: Iterable[str] | Mapping[str, Any] | None,
                         option: str = "--slurm-option") -> dict[str, str | bool]:
    """Extra sbatch options, from ``KEY=VALUE`` texts (``KEY`` alone: a flag, such as
    ``exclusive``) or a mapping; keys as sbatch's long options, ``-`` or ``_`` alike.

    Returns:
        ``{key: value}`` with ``_`` in keys (``mail_type``).

    Raises:
        UsageError: a key that is not a long option name, one that ncprobe sets itself
            (``array``, ``output`` ...), one with an option of its own (``partition``,
            ``time``, ``mem``, ``gres``: use ``--slurm-partition`` ...), or a key twice.
    """
    if given is None:
        return {}
    pairs: list[tuple[str, Any]]
    if isinstance(given, Mapping):
        pairs = list(given.items())
    else:
        pairs = []
        for item in given:
            key, sep, value = str(item).partition("=")
            pairs.append((key, value if sep else True))
    out: dict[str, str | bool] = {}
    for raw, value in pairs:
        key = str(raw).strip().lstrip("-").replace("-", "_")
        if not re.fullmatch(r"[a-z][a-z0-9_]+", key):
            raise UsageError(f"{option} {raw!r}: give sbatch's long option name (e.g. "
                             "account=proj42, qos=short, constraint=v100, exclusive)")
        if key in _RESERVED:
            raise UsageError(f"{option} {raw}: ncprobe sets --{key.replace('_', '-')} itself "
                             f"({_RESERVED[key]})")
        if key in _DEDICATED:
            raise UsageError(f"{option} {raw}: use {_DEDICATED[key]} for this")
        if key in out:
            raise UsageError(f"{option} {raw}: given twice")
        if value is not True and not isinstance(value, bool):
            value = str(value)
            if key in _INTEGER and not value.isdigit():
                raise UsageError(f"{option} {raw}={value}: give a whole number")
        out[key] = value
    return out


# --- watching the jobs ------------------------------------------------------------------------

def parse_squeue(text: str) -> dict[str, tuple[str, str]]:
    """``squeue -h -r -t all -o %i|%T|%r`` output: job id (``12`` or ``12_3`` for an array
    task) -> (state, reason). The state is the first word (``CANCELLED by 0`` -> ``CANCELLED``);
    lines that do not parse are left out."""
    jobs = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[0] and parts[1]:
            jobs[parts[0]] = (parts[1].split()[0].upper(), parts[2] if len(parts) > 2 else "")
    return jobs


@dataclass(frozen=True)
class Decision:
    """What to do about one task after a poll: ``wait``, ``result`` (its result file is
    there: read it), or ``fail`` (``why``; ``cancel``: cancel the job first)."""

    action: str
    why: str = ""
    cancel: bool = False


def decide(state: str | None, reason: str, *, has_result: bool, ended_for: float,
           running_for: float, limit_s: float, settle_s: float) -> Decision:
    """What a poll means for one task.

    Args:
        state: its state in ``squeue`` (None: not listed: the controller no longer knows it).
        reason: squeue's reason (``%r``), for a pending job.
        has_result: its result file exists (the function returned or raised).
        ended_for: seconds since it was first seen ended or gone without a result (0: now).
        running_for: seconds since it was first seen running (0: not seen running).
        limit_s: its time limit in seconds.
        settle_s: how long a result file may take to appear after the job ended (a shared
            filesystem's attribute cache).
    """
    if has_result:
        return Decision("result")
    if state is None or state in ENDED_STATES:
        if ended_for < settle_s:
            return Decision("wait")
        if state is None:
            return Decision("fail", "left the queue without a result (killed, or its node "
                            "lost)")
        return Decision("fail", f"ended {state} without a result")
    if state == "PENDING" and reason in HOPELESS_REASONS:
        return Decision("fail", f"cannot start: pending for {reason}", cancel=True)
    if state == "RUNNING" and running_for > limit_s + OVERRUN_S:
        return Decision("fail", f"still running {running_for / 60:.0f} min after it started, "
                        f"past its time limit of {limit_s / 60:.0f} min", cancel=True)
    return Decision("wait")


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
            (:func:`parse_sbatch_options`).
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
                params[f"slurm_{key}"] = int(value) if key in _INTEGER else value
            else:
                extra[key.replace("_", "-")] = value
        if extra:
            params["slurm_additional_parameters"] = extra
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
        ``squeue`` or ``srun`` on ``PATH``) and storage whose locks fail; warn about storage
        whose locks stay on each node, or that other nodes cannot see
        (:func:`~ncprobe.executors.storage.check_storage`).

        Raises:
            MissingPackageError: submitit is not installed.
            UsageError: no SLURM commands here.
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
        from ..cache import cache_root
        from ..data.sources import resolve_data_dir

        def absolute(p) -> str:
            return str(Path(p).expanduser().resolve())
        return replace(task, out=absolute(task.out),
                       data_dir=absolute(resolve_data_dir(task.data_dir)),
                       cache_dir=absolute(cache_root(task.cache_dir)) if task.cache else None,
                       progress=False)

    def wait(self, done: OnDone) -> None:
        """Submit the queued tasks, one job array per set of resources, and wait until each
        has an outcome. Ctrl-C cancels the jobs not finished yet.

        Raises:
            UsageError: sbatch refused a submission (the jobs already submitted are
                cancelled).
            NcprobeError: ``squeue`` kept failing for :data:`SQUEUE_PATIENCE_S` seconds.
        """
        tasks, self._queue = self._queue, []
        if not tasks:
            return
        import submitit

        assert self.folder is not None, "prepare() first"
        groups: dict[Resources, list[Task]] = {}
        for task in tasks:
            groups.setdefault(self.resources(task), []).append(task)
        watches: list[_Watch] = []
        try:
            for res, members in groups.items():
                ex = submitit.AutoExecutor(folder=self.folder / "%j", cluster="slurm")
                ex.update_parameters(**self.parameters(res))
                jobs = ex.map_array(run_task, [self._remote(t) for t in members])
                for task, job in zip(members, jobs, strict=True):
                    watches.append(_Watch(task, job, res))
                    self._say(f"slurm: {task.label}: job {job.job_id} ({res.describe()}), log "
                              f"{job.paths.stdout}")
        except Exception as e:  # sbatch's refusal comes as submitit's or subprocess's error
            self._cancel([w.job.job_id for w in watches])
            raise UsageError(f"sbatch refused the jobs: {_sbatch_message(e)} (check "
                             "--slurm-partition, --slurm-gpus, --slurm-mem, --slurm-time and "
                             "--slurm-option against what the cluster offers: sinfo)") from e
        try:
            self._watch(watches, done)
        except BaseException:
            self._cancel([w.job.job_id for w in watches if not _has_result(w)])
            raise

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
                    raise NcprobeError(
                        f"squeue has failed for {SQUEUE_PATIENCE_S / 60:.0f} min (see the "
                        f"warnings above); stopped waiting for jobs {', '.join(ids)}. Run "
                        "the same command again once the cluster answers: finished runs are "
                        "kept")
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


def _sbatch_message(err: BaseException) -> str:
    """The useful line of a submission error: sbatch's own ``error:`` line when there is one."""
    text = str(err)
    lines = [ln.strip() for ln in text.splitlines() if "error" in ln.lower()]
    return lines[-1] if lines else (text.strip().splitlines() or [type(err).__name__])[-1]
