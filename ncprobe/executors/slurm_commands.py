"""SLURM's commands as ncprobe reads and writes them: plain functions of text, nothing run.

* the sbatch options a user gives (:func:`parse_time`, :func:`parse_mem`, :func:`parse_gpus`,
  :func:`parse_sbatch_options`), checked before anything is submitted;
* what ``squeue`` prints (:func:`parse_squeue`) and what one poll means for a task
  (:func:`decide`: wait, read its result, fail it, or stop because it can never start,
  :data:`HOPELESS_REASONS`);
* what ``sinfo`` says of the nodes (:func:`nodes_of`) and whether a request fits one
  (:func:`fits`);
* what sbatch says when it refuses (:func:`sbatch_message`), and the error for a controller
  that cannot be reached (:func:`no_controller`).

:mod:`ncprobe.executors.slurm` runs the commands, submits through submitit and watches the jobs
with these.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..errors import UsageError

if TYPE_CHECKING:
    from . import Resources

#: job states after which nothing more happens (squeue's long names, ``%T``)
ENDED_STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT"})
#: reasons a pending job waits for what no wait brings (the request exceeds what the
#: partition, its limits or the account allow: an option must change): squeue's reason ->
#: what it means. Such a job stops the reproduction (exit 2) and every job is cancelled.
#: ``ReqNodeNotAvail`` is not one: it also means nodes down or reserved, which come back.
HOPELESS_REASONS: Mapping[str, str] = {
    "PartitionConfig": "it asks for more CPUs, memory or GPUs than the partition's nodes "
                       "have, or for what the partition's configuration refuses",
    "BadConstraints": "no node of the partition satisfies its constraints (CPUs, memory, "
                      "GPUs, --slurm-option constraint)",
    "PartitionNodeLimit": "it asks for more nodes than the partition allows",
    "PartitionTimeLimit": "its --slurm-time is above the partition's time limit",
    "InvalidAccount": "its account is not valid (--slurm-option account)",
    "InvalidQOS": "its QOS is not valid for the account (--slurm-option qos)",
    "DependencyNeverSatisfied": "its --slurm-option dependency can never be satisfied",
    **{f"{who}Max{what}": f"it asks for more {noun} than the "
       f"{'QOS' if who == 'QOS' else 'association'} allows one job"
       for who in ("QOS", "Assoc")
       for what, noun in (("CpuPerJobLimit", "CPUs"), ("NodePerJobLimit", "nodes"),
                          ("WallDurationPerJobLimit", "time"), ("GRESPerJob", "GPUs"))},
    "QOSMaxMemoryPerJob": "it asks for more memory than the QOS allows one job",
    "AssocMaxMemPerJob": "it asks for more memory than the association allows one job",
}
#: how long a running job may outlive its time limit before it is taken for lost (SLURM
#: kills it at the limit, plus KillWait and the signal delay)
OVERRUN_S = 600.0
#: what SLURM's commands say when slurmctld cannot be reached
NO_CONTROLLER = re.compile(r"unable to contact slurm controller", re.IGNORECASE)

#: sbatch options that ncprobe or submitit set themselves: not to be given
_RESERVED = {"array": "ncprobe submits each group of tasks as one array",
             "output": "submitit names each task's log", "error": "submitit names each "
             "task's log", "open_mode": "submitit appends to each task's log",
             "signal": "submitit asks for the signal before the time limit",
             "wrap": "submitit writes the job script",
             "chdir": "each job runs in its log folder, so that it imports the ncprobe that "
             "submitted it", "workdir": "each job runs in its log folder"}
#: sbatch options that have an option of their own
_DEDICATED = {"partition": "--slurm-partition", "time": "--slurm-time", "mem": "--slurm-mem",
              "gres": "--slurm-gpus", "gpus": "--slurm-gpus"}

#: sbatch options whose value is a whole number
INTEGER_OPTIONS = frozenset({"cpus_per_task", "cpus_per_gpu", "gpus_per_node",
                             "gpus_per_task", "nodes", "ntasks_per_node"})

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
            if key in INTEGER_OPTIONS and not value.isdigit():
                raise UsageError(f"{option} {raw}={value}: give a whole number")
        out[key] = value
    return out


# --- watching the jobs (squeue) -------------------------------------------------------------------

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
    there: read it), ``fail`` (``why``; ``cancel``: cancel the job first), or
    ``impossible`` (it can never start as asked: stop the reproduction, exit 2)."""

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
    # squeue may add details after a comma ("ReqNodeNotAvail, UnavailableNodes:n1")
    word = reason.split(",")[0].strip()
    if state == "PENDING" and word in HOPELESS_REASONS:
        return Decision("impossible", f"cannot start: pending for {word} "
                        f"({HOPELESS_REASONS[word]})", cancel=True)
    if state == "RUNNING" and running_for > limit_s + OVERRUN_S:
        return Decision("fail", f"still running {running_for / 60:.0f} min after it started, "
                        f"past its time limit of {limit_s / 60:.0f} min", cancel=True)
    return Decision("wait")


# --- what sbatch says -----------------------------------------------------------------------------

def sbatch_message(err: BaseException) -> str:
    """The useful line of a submission error: sbatch's own ``error:`` line when there is one."""
    text = str(err)
    lines = [ln.strip() for ln in text.splitlines() if "error" in ln.lower()]
    return lines[-1] if lines else (text.strip().splitlines() or [type(err).__name__])[-1]


def no_controller(said: str) -> UsageError:
    """The error for a SLURM client whose controller does not answer; ``said``: what the
    SLURM command printed."""
    conf = os.environ.get("SLURM_CONF")
    which = f"SLURM_CONF={conf}" if conf else "/etc/slurm/slurm.conf, or SLURM_CONF"
    return UsageError(f"the SLURM controller (slurmctld) cannot be reached from this machine "
                      f"({said}); nothing was submitted. Check that slurmctld runs and that "
                      f"this machine's SLURM configuration ({which}) names it, or run ncprobe "
                      "on the cluster's login node; then run the same command again")


# --- what the nodes offer (sinfo) -----------------------------------------------------------------

@dataclass(frozen=True)
class NodeSize:
    """One node as ``sinfo -N -o '%N|%P|%c|%m'`` lists it: its CPUs and memory (MB)."""

    name: str
    cpus: int
    mem_mb: int


def nodes_of(text: str, partition: str | None) -> list[NodeSize]:
    """The nodes of ``sinfo -h -N -o '%N|%P|%c|%m'`` output in ``partition`` (a name or a
    comma list; None: the default partition, the one sinfo marks ``*``). A node in several
    partitions is listed once per partition; lines that do not parse are left out."""
    wanted = set(partition.split(",")) if partition else None
    nodes: dict[str, NodeSize] = {}
    for line in text.splitlines():
        parts = [x.strip() for x in line.split("|")]
        if len(parts) != 4 or not parts[2].isdigit():
            continue
        name, part, cpus, mem = parts
        default = part.endswith("*")
        if (wanted is None and not default) or (wanted is not None and
                                                part.rstrip("*") not in wanted):
            continue
        mem_mb = int(mem.rstrip("+")) if mem.rstrip("+").isdigit() else 0
        nodes[name] = NodeSize(name, int(cpus), mem_mb)
    return list(nodes.values())


def mem_mb(text: str) -> int:
    """A memory size as :func:`parse_mem` returns it (``16G``, ``500``: megabytes) in MB,
    rounded up."""
    number, unit = int(re.sub(r"\D", "", text)), re.sub(r"\d", "", text) or "M"
    return math.ceil(number * {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 ** 2}[unit])


def fits(res: Resources, nodes: Iterable[NodeSize]) -> str | None:
    """Whether some node has the CPUs and the memory ``res`` asks for: None, else what no
    node has: ``cpus`` (no node has that many CPUs), or ``mem`` (none with the CPUs has that
    much memory). A node whose memory sinfo does not state (0) is taken to have enough."""
    nodes = list(nodes)
    enough = [n for n in nodes if n.cpus >= res.cpus]
    if not enough:
        return "cpus"
    need = mem_mb(res.mem)
    if not any(n.mem_mb == 0 or n.mem_mb >= need for n in enough):
        return "mem"
    return None
