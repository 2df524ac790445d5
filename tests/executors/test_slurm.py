"""``ncprobe reproduce --executor slurm``: the executor seam, the SLURM executor's options, its
reading of ``squeue``, the storage checks, resumption, and (marked ``slurm``) the whole path on
a real cluster: the single-node one that ``.ci/slurm.sh start`` brings up (as root; without
one those tests skip, saying how to start it).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from ncprobe.cli import main
from ncprobe.encoders.registry import MODELS
from ncprobe.errors import OutputError, UsageError
from ncprobe.executors import (
    DEFAULT_RESOURCES,
    Task,
    executor_names,
    make_executor,
    resources_for,
)
from ncprobe.executors import storage as st
from ncprobe.executors.local import LocalExecutor
from ncprobe.executors.slurm import SlurmExecutor
from ncprobe.executors.slurm_commands import (
    OVERRUN_S,
    decide,
    parse_gpus,
    parse_mem,
    parse_sbatch_options,
    parse_squeue,
    parse_time,
)
from ncprobe.ncimp.config import RunConfig
from ncprobe.ncimp.reproduce import _compute


def _task(model: str = "glove-6b-50d", lang: str = "en", **options) -> Task:
    return Task(0, model, lang, RunConfig(model=model, lang=lang, **options), "out",
                compute=_compute)


# --- the seam ----------------------------------------------------------------------------------

def test_the_executors_are_found_by_name() -> None:
    assert executor_names() == ["local", "slurm"]
    assert isinstance(make_executor("local"), LocalExecutor)
    slurm = make_executor("slurm", {"mem": "16g"})
    assert isinstance(slurm, SlurmExecutor) and slurm.mem == "16G"
    with pytest.raises(UsageError, match="unknown executor 'ray'"):
        make_executor("ray")
    with pytest.raises(UsageError, match="takes no option mem"):
        make_executor("local", {"mem": "16G"})
    with pytest.raises(UsageError, match="takes no option memory .*partition"):
        make_executor("slurm", {"memory": "16G"})


class _Written:
    """What a task's computation returns: results that record where they were written."""

    def __init__(self, config) -> None:
        self.config = config
        self.written: list[tuple[str, bool]] = []

    def to_parquet(self, path, *, overwrite: bool = False) -> Path:
        self.written.append((str(path), overwrite))
        return Path(path)


def _fake_compute(config, **kwargs):  # module level: a task sends it by reference
    _fake_compute.calls.append((config, kwargs))  # type: ignore[attr-defined]
    return _Written(config)


def test_a_task_computes_with_the_function_its_caller_gives(tmp_path) -> None:
    """The shared executors name no probe (issue 39): a task computes with the function its
    caller gives (NCIMP's reproduction gives its own), never one the executors pick; a task
    without one is refused when made."""
    from ncprobe.executors import compute_task

    _fake_compute.calls = []  # type: ignore[attr-defined]
    cfg = RunConfig(model="glove-6b-50d", lang="en")
    task = Task(3, "glove-6b-50d", "en", cfg, str(tmp_path / "out"), data_dir="d",
                cache=False, cache_dir="c", overwrite=True, progress=False,
                compute=_fake_compute)
    res, outcome = compute_task(task)
    assert _fake_compute.calls == [(cfg, {"data_dir": "d", "cache": False,  # type: ignore
                                          "cache_dir": "c", "progress": False})]
    assert isinstance(res, _Written) and res.written == [(str(tmp_path / "out"), True)]
    assert outcome.status == "ran" and outcome.path == str(tmp_path / "out")
    with pytest.raises(TypeError, match="compute"):
        Task(0, "glove-6b-50d", "en", cfg, "out")  # type: ignore[call-arg]


# --- resources from the registry, and their overrides ------------------------------------------

@pytest.mark.parametrize("model", ["glove-6b-50d", "minilm", "bert-large", "llama2", "openai",
                                   "some-org/some-hub-model"])
def test_resources_follow_the_registry(model) -> None:
    spec = MODELS.get(model)
    res = resources_for(model, "en")
    if spec is not None and spec.gpu:
        assert res.wants_gpu and res.gpus == "1" and res == DEFAULT_RESOURCES["gpu"]
        on_cpu = resources_for(model, "en", device="cpu")  # --device cpu: no GPU asked for
        assert not on_cpu.wants_gpu and on_cpu.time_min == 2 * res.time_min
    else:
        assert not res.wants_gpu
        kind = spec.family if spec is not None and spec.family in ("static", "openai") else "cpu"
        assert res == DEFAULT_RESOURCES[kind]
    # static vectors ask for the least; a transformer on CPUs for more
    assert DEFAULT_RESOURCES["static"].cpus <= DEFAULT_RESOURCES["cpu"].cpus


def test_overrides_replace_the_registrys_resources() -> None:
    ex = SlurmExecutor(mem="16g", time="1-12", gpus="a100:2", sbatch=["cpus-per-task=6"])
    res = ex.resources(_task("minilm"))
    # 1-12 is one day and twelve hours: 36 h = 2160 min
    assert (res.mem, res.time_min, res.gpus, res.cpus) == ("16G", 2160, "a100:2", 6)
    assert res.describe() == "6 CPUs, 16G, 36:00:00, GPU gpu:a100:2"
    plain = SlurmExecutor().resources(_task("glove-6b-50d"))
    assert plain == DEFAULT_RESOURCES["static"]
    # --slurm-gpus 0 takes the GPU away from a GPU model; and a GPU model's availability is
    # judged as if the node's GPU were here
    assert not SlurmExecutor(gpus=0).resources(_task("llama2")).wants_gpu
    assert SlurmExecutor().assumed_device("llama2", "en", None) == "cuda"
    assert SlurmExecutor(gpus="0").assumed_device("llama2", "en", None) is None
    assert SlurmExecutor().assumed_device("llama2", "en", "cpu") == "cpu"
    assert SlurmExecutor().assumed_device("minilm", "en", None) is None
    assert LocalExecutor().assumed_device("llama2", "en", None) is None


@pytest.mark.parametrize("text, seconds", [
    ("90", 90 * 60), ("1:30", 90), ("2:00:00", 7200), ("1-12", 36 * 3600),
    ("1-0:30", 24 * 3600 + 30 * 60), ("0-0:0:59", 59), (" 45 ", 45 * 60)])
def test_slurm_time_forms(text, seconds) -> None:
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["0", "0:00", "1h", "", "1-", "-1", "1:2:3:4", "infinite"])
def test_bad_slurm_times_are_refused_naming_the_option(text) -> None:
    with pytest.raises(UsageError, match="--slurm-time .*HOURS:MINUTES:SECONDS"):
        parse_time(text)


def test_memory_and_gpu_forms() -> None:
    assert [parse_mem(x) for x in ("16g", "500", "2GB", "1t")] == ["16G", "500", "2G", "1T"]
    for bad in ("0", "1.5G", "16X", "G", "-4G"):
        with pytest.raises(UsageError, match="--slurm-mem"):
            parse_mem(bad)
    assert [parse_gpus(x) for x in (0, "2", "a100:1", "nvidia_h100:4")] == \
        ["0", "2", "a100:1", "nvidia_h100:4"]
    for bad in ("-1", "a100", "1:a100", "two"):
        with pytest.raises(UsageError, match="--slurm-gpus"):
            parse_gpus(bad)
    with pytest.raises(UsageError, match="--slurm-partition"):
        SlurmExecutor(partition="gpu; rm -rf")
    with pytest.raises(UsageError, match="--slurm-wait"):
        SlurmExecutor(wait="soon")


def test_sbatch_options() -> None:
    got = parse_sbatch_options(["account=proj42", "exclusive", "mail-type=END", "--qos=short",
                                "comment=a=b"])
    assert got == {"account": "proj42", "exclusive": True, "mail_type": "END", "qos": "short",
                   "comment": "a=b"}
    assert parse_sbatch_options({"reservation": "r1"}) == {"reservation": "r1"}
    for bad, said in [("array=0-3", "sets --array itself"), ("output=x", "sets --output"),
                      ("partition=gpu", "--slurm-partition"), ("mem=4G", "--slurm-mem"),
                      ("time=10", "--slurm-time"), ("gres=gpu:1", "--slurm-gpus"),
                      ("p=gpu", "long option name"), ("cpus-per-task=many", "whole number"),
                      ("chdir=/home/me", "runs in its log folder")]:
        with pytest.raises(UsageError, match=re.escape(said)):
            parse_sbatch_options([bad])
    with pytest.raises(UsageError, match="given twice"):
        parse_sbatch_options(["qos=a", "qos=b"])


def test_the_job_script_asks_for_the_resources(monkeypatch, tmp_path) -> None:
    submitit = pytest.importorskip("submitit")
    from submitit.slurm import slurm as submitit_slurm

    # where no srun is on PATH submitit refuses to build a SLURM executor; the script's text
    # needs none
    monkeypatch.setattr(submitit_slurm.SlurmExecutor, "affinity", classmethod(lambda cls: 2))
    ex = SlurmExecutor(partition="gpu", mem="16G", time="90", gpus="1",
                       sbatch=["account=proj42", "reservation=r1", "cpus-per-task=3"],
                       folder=tmp_path / "logs")
    auto = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="slurm")
    auto.update_parameters(**ex.parameters(ex.resources(_task("minilm"))))
    script = auto._executor._make_submission_file_text("python -m x", "uid")
    lines = set(script.splitlines())
    for wanted in ("#SBATCH --partition=gpu", "#SBATCH --mem=16G", "#SBATCH --time=90",
                   "#SBATCH --gres=gpu:1", "#SBATCH --account=proj42",
                   "#SBATCH --reservation=r1", "#SBATCH --cpus-per-task=3",
                   "#SBATCH --job-name=ncprobe",
                   # the job runs in its log folder, never where it was submitted from
                   f"#SBATCH --chdir={tmp_path / 'logs'}"):
        assert wanted in lines, (wanted, script)
    assert not any(line.startswith("#SBATCH --gpus") for line in lines)


# --- reading the queue -------------------------------------------------------------------------

def test_squeue_lines_as_slurm_writes_them() -> None:
    # `squeue -h -r -t all -j 1,4 -o "%i|%T|%r"` as slurm 22.05 printed it on the CI cluster,
    # plus a pending array record without -r and a line that is no job
    text = ("1_1|RUNNING|None\n1_0|COMPLETED|None\n4|PENDING|Resources\n"
            "5_[2-4%2]|PENDING|JobArrayTaskLimit\n6|CANCELLED by 0|None\n\ngarbage\n")
    assert parse_squeue(text) == {
        "1_1": ("RUNNING", "None"), "1_0": ("COMPLETED", "None"), "4": ("PENDING", "Resources"),
        "5_[2-4%2]": ("PENDING", "JobArrayTaskLimit"), "6": ("CANCELLED", "None")}
    assert parse_squeue("") == {}


@pytest.mark.parametrize("state, reason, has_result, ended_for, running_for, action, why", [
    ("RUNNING", "None", False, 0, 5, "wait", ""),
    ("PENDING", "Resources", False, 0, 0, "wait", ""),
    ("COMPLETING", "None", False, 0, 5, "wait", ""),
    ("COMPLETED", "None", True, 0, 5, "result", ""),     # the result file decides
    ("CANCELLED", "None", True, 30, 5, "result", ""),    # finished before the kill came
    (None, "", True, 0, 0, "result", ""),
    ("FAILED", "None", False, 3, 5, "wait", ""),         # the file may still be on its way
    ("FAILED", "None", False, 10, 5, "fail", "ended FAILED without a result"),
    ("OUT_OF_MEMORY", "None", False, 60, 5, "fail", "ended OUT_OF_MEMORY"),
    ("COMPLETED", "None", False, 12, 5, "fail", "ended COMPLETED without a result"),
    (None, "", False, 9, 0, "wait", ""),
    (None, "", False, 10, 0, "fail", "left the queue without a result"),
    # a request the cluster can never meet stops the reproduction (exit 2), whatever the
    # details squeue adds after a comma; ReqNodeNotAvail (nodes down) may pass: wait
    ("PENDING", "BadConstraints", False, 0, 0, "impossible", "pending for BadConstraints"),
    ("PENDING", "PartitionConfig", False, 0, 0, "impossible", "pending for PartitionConfig"),
    ("PENDING", "QOSMaxCpuPerJobLimit", False, 0, 0, "impossible", "more CPUs than the QOS"),
    ("PENDING", "ReqNodeNotAvail, UnavailableNodes:n1", False, 0, 0, "wait", ""),
    ("PENDING", "BeginTime", False, 0, 0, "wait", ""),
    ("RUNNING", "None", False, 0, 3600 + OVERRUN_S + 1, "fail", "past its time limit"),
    ("RUNNING", "None", False, 0, 3600 + OVERRUN_S - 1, "wait", ""),
])
def test_what_a_poll_decides(state, reason, has_result, ended_for, running_for, action,
                             why) -> None:
    d = decide(state, reason, has_result=has_result, ended_for=ended_for,
               running_for=running_for, limit_s=3600, settle_s=10)
    assert d.action == action and why in d.why
    # a job that can never run, or overran, is cancelled before it is failed
    assert d.cancel == (action in ("fail", "impossible") and state in ("PENDING", "RUNNING"))


def test_the_watch_reports_a_vanished_job_with_its_log_and_reads_a_result(tmp_path) -> None:
    """Two jobs seen through a scripted squeue: one dies (gone from the queue, no result
    file), the other writes its result file as submitit does."""
    pytest.importorskip("submitit")
    from ncprobe.executors import slurm as sl

    def job(job_id: str) -> SimpleNamespace:
        folder = tmp_path / job_id
        folder.mkdir()
        paths = SimpleNamespace(stdout=folder / f"{job_id}_0_log.out",
                                result_pickle=folder / f"{job_id}_0_result.pkl")
        return SimpleNamespace(job_id=job_id, paths=paths)

    dead, good = job("7_0"), job("7_1")
    out_dir = tmp_path / "results" / "minilm-en"
    out_dir.mkdir(parents=True)
    polls = iter([{"7_0": ("RUNNING", "None"), "7_1": ("RUNNING", "None")},
                  {"7_1": ("COMPLETED", "None")},   # 7_0 gone: the controller lost it
                  {}, {}, {}])

    class Scripted(SlurmExecutor):
        def _squeue(self, array_ids):
            assert array_ids == ["7"]
            listed = next(polls)
            if "7_1" in listed and listed["7_1"][0] == "COMPLETED":
                with open(good.paths.result_pickle, "wb") as fh:  # what submitit writes
                    pickle.dump(("success", {"status": "ran", "path": str(out_dir),
                                             "where": "node3"}), fh)
            return listed

    events: list[str] = []
    ex = Scripted(poll_s=0, settle_s=0, on_event=events.append)
    watches = [sl._Watch(_task("glove-6b-50d"), dead, DEFAULT_RESOURCES["static"]),
               sl._Watch(_task("minilm"), good, DEFAULT_RESOURCES["cpu"])]
    outcomes = []
    ex._watch(watches, outcomes.append)
    by_model = {o.task.model: o for o in outcomes}
    lost = by_model["glove-6b-50d"]
    assert lost.status == "failed" and "left the queue without a result" in lost.why
    assert lost.log == str(dead.paths.stdout) and "7_0" in lost.why
    ok = by_model["minilm"]
    assert (ok.status, ok.path, ok.where) == ("ran", str(out_dir), "node3")
    assert any("glove-6b-50d (en) failed" in e for e in events)


def test_a_task_that_raised_is_failed_with_the_last_line_of_its_traceback(tmp_path) -> None:
    pytest.importorskip("submitit")
    from ncprobe.executors import slurm as sl

    folder = tmp_path / "9"
    folder.mkdir()
    paths = SimpleNamespace(stdout=folder / "9_0_log.out", result_pickle=folder / "r.pkl")
    with open(paths.result_pickle, "wb") as fh:
        pickle.dump(("error", "Traceback (most recent call last):\n  ...\n"
                              "ncprobe.errors.DataError: scores.csv: no such file\n"), fh)
    w = sl._Watch(_task(), SimpleNamespace(job_id="9", paths=paths), DEFAULT_RESOURCES["static"])
    got = SlurmExecutor()._outcome(w)
    assert got.status == "failed" and got.log == str(paths.stdout)
    assert got.why == "job 9 raised ncprobe.errors.DataError: scores.csv: no such file"


def test_a_job_pending_for_what_no_node_has_stops_the_reproduction_naming_the_option(
        tmp_path) -> None:
    """A job pending for PartitionConfig (more CPUs than any node has) waits forever: it is
    the command line's error (exit 2), naming the option, and no outcome is reported."""
    pytest.importorskip("submitit")
    from ncprobe.executors import slurm as sl

    folder = tmp_path / "3"
    folder.mkdir()
    paths = SimpleNamespace(stdout=folder / "3_0_log.out", result_pickle=folder / "r.pkl")

    cancelled: list = []

    class Scripted(SlurmExecutor):
        def _squeue(self, array_ids):
            return {"3_0": ("PENDING", "PartitionConfig")}

        def _cancel(self, job_ids):
            cancelled.extend(job_ids)

    # --slurm-wait bounds a wait that should not begin
    ex = Scripted(sbatch=["cpus-per-task=64"], poll_s=0.01, settle_s=0, wait=3)
    res = ex.resources(_task("minilm"))
    w = sl._Watch(_task("minilm"), SimpleNamespace(job_id="3_0", paths=paths), res)
    outcomes: list = []
    with pytest.raises(UsageError) as err:
        ex._watch([w], outcomes.append)
    assert err.value.exit_code == 2
    assert "job 3_0 (minilm (en): 64 CPUs" in str(err.value)
    assert "pending for PartitionConfig" in str(err.value)
    assert "--slurm-option cpus-per-task=64" in str(err.value)
    assert outcomes == [] and cancelled == []  # wait() cancels every job, this one too


def test_what_the_nodes_of_a_partition_offer() -> None:
    from ncprobe.executors.slurm_commands import NodeSize, fits, mem_mb, nodes_of

    # `sinfo -h -N -o "%N|%P|%c|%m"`: small nodes in the default partition (debug*), one big
    # node in gpu, a node in both; a line that is no node
    text = ("n1|debug*|4|16000\nn2|debug*|8|32000\nbig|gpu|64|512000\nn2|gpu|8|32000\n"
            "oops\n")
    default = nodes_of(text, None)
    assert sorted(n.name for n in default) == ["n1", "n2"]
    assert nodes_of(text, "gpu") == [NodeSize("big", 64, 512000), NodeSize("n2", 8, 32000)]
    assert sorted(n.name for n in nodes_of(text, "debug,gpu")) == ["big", "n1", "n2"]
    assert nodes_of(text, "none") == []
    # 16G is 16 * 1024 MB; 500 is megabytes; 1T is 1024 * 1024 MB; 1500K rounds up to 2 MB
    assert [mem_mb(x) for x in ("16G", "500", "1T", "1500K")] == [16384, 500, 1048576, 2]

    def res(cpus, mem):
        return DEFAULT_RESOURCES["cpu"].__class__(cpus=cpus, mem=mem, time_min=10)
    assert fits(res(8, "31G"), default) is None        # n2: 8 CPUs, 32000 MB >= 31744 MB
    assert fits(res(9, "1G"), default) == "cpus"       # no node of debug has 9 CPUs
    assert fits(res(8, "32G"), default) == "mem"       # n2 has 32000 MB < 32768 MB
    assert fits(res(4, "20G"), default) is None        # n1 is too small, n2 is not
    assert fits(res(64, "500G"), nodes_of(text, "gpu")) is None


def _fake_slurm(bin_dir: Path, *, ping: str = "Slurmctld(primary) at head is UP", ping_rc=0,
                sbatch: str = "echo 'Submitted batch job 42'",
                squeue: str = "echo '42|PENDING|BeginTime'") -> Path:
    """SLURM's commands as shell scripts: scontrol ping, sinfo (one node of 8 CPUs and 16000
    MB in the default partition), sbatch, squeue; scancel writes its arguments to
    ``scancel.args``."""
    bin_dir.mkdir()
    scripts = {
        "scontrol": f"echo '{ping}'; exit {ping_rc}",
        "sinfo": 'case "$*" in *%D*) echo 1 ;; *) echo "head|debug*|8|16000" ;; esac',
        "sbatch": sbatch, "squeue": squeue, "srun": "exit 0",
        "scancel": f'echo "$@" >> {bin_dir / "scancel.args"}'}
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    return bin_dir


def _submit_one(tmp_path: Path, **options) -> tuple[SlurmExecutor, list]:
    # --slurm-wait: a bound on a wait that the code under test should never start
    ex = SlurmExecutor(poll_s=0.05, settle_s=0, on_event=lambda line: None, wait=10,
                       **options)
    ex.prepare(results_dir=tmp_path / "results", cache_dir=None)
    task = Task(0, "glove-6b-50d", "en", RunConfig(model="glove-6b-50d", lang="en"),
                str(tmp_path / "results" / "glove-en"), data_dir=str(tmp_path), cache=False,
                compute=_compute)
    ex.submit(task, lambda outcome: None)
    return ex, [task]


def test_no_controller_is_said_before_anything_is_written(tmp_path, monkeypatch) -> None:
    pytest.importorskip("submitit")
    fake = _fake_slurm(tmp_path / "bin", ping="Slurmctld(primary) at head is DOWN", ping_rc=1)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(UsageError) as err:
        _submit_one(tmp_path)
    said = str(err.value)
    assert "the SLURM controller (slurmctld) cannot be reached" in said
    assert "Slurmctld(primary) at head is DOWN" in said and "partition" not in said
    assert not (tmp_path / "results").exists()


def test_sbatch_without_a_controller_is_said_and_leaves_no_log_folder(tmp_path,
                                                                       monkeypatch) -> None:
    """The controller answered the ping, then not sbatch: the message says so (not "check
    the partition"), and the log folder made for the submission is removed."""
    pytest.importorskip("submitit")
    fake = _fake_slurm(tmp_path / "bin", sbatch=(
        "echo 'sbatch: error: Batch job submission failed: Unable to contact slurm controller "
        "(connect failure)' >&2; exit 1"))
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    ex, _ = _submit_one(tmp_path)
    with pytest.raises(UsageError) as err:
        ex.wait(lambda outcome: None)
    said = str(err.value)
    assert "the SLURM controller (slurmctld) cannot be reached" in said
    assert "Unable to contact slurm controller" in said and "--slurm-partition" not in said
    assert not (tmp_path / "results").exists()  # slurm-logs/<stamp>/ and the parents it made


def test_a_request_larger_than_any_node_is_refused_before_submitting(tmp_path,
                                                                      monkeypatch) -> None:
    pytest.importorskip("submitit")
    fake = _fake_slurm(tmp_path / "bin")  # one node: 8 CPUs, 16000 MB
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    for options, said in [({"sbatch": ["cpus-per-task=512"]},
                           "--slurm-option cpus-per-task=512: no node of the default "
                           "partition has 512 CPUs (the most: 8"),
                          ({"mem": "64G"}, "--slurm-mem 64G: no node of the default partition "
                           "with 1 CPUs has that much memory (the most: 16000M")]:
        ex, _ = _submit_one(tmp_path, **options)
        with pytest.raises(UsageError, match=re.escape(said)):
            ex.wait(lambda outcome: None)
        assert not (tmp_path / "bin" / "sbatch.ran").exists()
        assert not (tmp_path / "results").exists()


def test_sigterm_while_waiting_cancels_the_jobs(tmp_path, monkeypatch) -> None:
    """SIGTERM while the job waits in the queue: it is cancelled (scancel 42: one task alone
    is no array), and the wait ends with Terminated (exit 143); the handler in place before
    is back afterwards."""
    pytest.importorskip("submitit")
    from ncprobe.executors import Terminated

    fake = _fake_slurm(tmp_path / "bin")  # 42 pending for BeginTime, for ever
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")

    class Before(Exception):
        pass

    def before(signum, frame):
        raise Before()
    previous = signal.signal(signal.SIGTERM, before)  # what a caller had: kept, not called
    try:
        ex, _ = _submit_one(tmp_path)
        timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        try:
            with pytest.raises(Terminated) as err:
                ex.wait(lambda outcome: None)
        finally:
            timer.cancel()
        assert err.value.exit_code == 143 and "SIGTERM" in str(err.value)
        assert (fake / "scancel.args").read_text().split() == ["42"]
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- which ncprobe a job imports -----------------------------------------------------------------

def test_the_job_function_travels_as_code_and_refuses_another_ncprobe(tmp_path) -> None:
    """What a job calls reaches the node as code, so that loading it imports no ncprobe; in
    a working directory holding another `ncprobe` it refuses, naming the submitter's."""
    pytest.importorskip("submitit")
    import cloudpickle

    import ncprobe
    from ncprobe.executors import slurm as sl

    call, expected = sl._job_function()
    assert expected == os.path.realpath(ncprobe.__file__)
    (tmp_path / "call.pkl").write_bytes(cloudpickle.dumps(call))
    foreign = tmp_path / "ncprobe"
    foreign.mkdir()
    (foreign / "__init__.py").write_text("raise RuntimeError('an old copy of ncprobe')\n")
    probe = (
        "import pickle, sys\n"
        "call = pickle.loads(open('call.pkl', 'rb').read())\n"
        "print('loaded; ncprobe imported:', 'ncprobe' in sys.modules)\n"
        f"call({expected!r}, b'')\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert "loaded; ncprobe imported: False" in out.stdout, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: the job cannot import ncprobe (RuntimeError: an old "
                           "copy of ncprobe)"), out.stderr
    assert f"it should import {expected}" in last and f"working directory {tmp_path}" in last


def test_the_job_path_holds_the_submitting_package_only_where_needed(tmp_path,
                                                                      monkeypatch) -> None:
    import importlib
    import importlib.machinery

    import ncprobe
    from ncprobe.executors import slurm as sl

    finders = [importlib.machinery.PathFinder]
    mine, other = tmp_path / "mine", tmp_path / "other"
    for root in (mine, other):
        (root / "ncprobe").mkdir(parents=True)
        (root / "ncprobe" / "__init__.py").write_text("")
    importlib.invalidate_caches()
    expected = os.path.realpath(mine / "ncprobe" / "__init__.py")
    # the first entry is the working directory (a job's own differs): it does not count
    assert not sl.found_without_cwd(expected, [str(mine)], finders)
    assert sl.found_without_cwd(expected, ["/nowhere", str(mine)], finders)
    assert not sl.found_without_cwd(expected, ["/nowhere", str(other), str(mine)], finders)
    assert not sl.found_without_cwd(expected, ["/nowhere", "mine"], finders)  # relative
    # this process's ncprobe seen only through its working directory: the job's PYTHONPATH
    # gets the package's parent first
    parent = Path(ncprobe.__file__).resolve().parent.parent
    monkeypatch.setattr(sys, "path", [str(parent), "/nowhere"])
    monkeypatch.setattr(sys, "meta_path", finders)
    assert sl._job_setup() == [f"export PYTHONPATH={parent}${{PYTHONPATH:+:$PYTHONPATH}}"]
    monkeypatch.setattr(sys, "path", ["/nowhere", str(parent)])
    assert sl._job_setup() == []


# --- storage -----------------------------------------------------------------------------------

MOUNTS = """\
/dev/sda1 / ext4 rw,relatime 0 0
server:/export/home /home nfs4 rw,vers=4.2,local_lock=none 0 0
server:/scratch /home/lab/scratch\\040space lustre rw,localflock 0 0
tmpfs /tmp tmpfs rw 0 0
"""


def test_mounts_are_read_as_the_kernel_writes_them() -> None:
    mounts = st.parse_mounts(MOUNTS)
    assert [m.point for m in mounts] == ["/", "/home", "/home/lab/scratch space", "/tmp"]
    assert st.mount_of("/home/lab/results", mounts).fstype == "nfs4"
    assert st.mount_of("/home/lab/scratch space/r", mounts).fstype == "lustre"
    assert st.mount_of("/home2/x", mounts).fstype == "ext4"  # not under /home
    assert st.mount_of("/tmp", mounts).fstype == "tmpfs"


def test_storage_warnings() -> None:
    mounts = st.parse_mounts(MOUNTS)

    def warning(path, nodes):
        return st.storage_warning("results directory", path, st.mount_of(path, mounts), nodes)
    nfs = warning("/home/lab/results", 1)
    assert nfs and "nfs4" in nfs and "stay on each node" in nfs
    assert "stay on each node" in warning("/home/lab/scratch space/r", 4)  # localflock
    assert "2 nodes" in warning("/tmp/results", 2)       # a node's own disk, several nodes
    assert warning("/tmp/results", 1) is None           # one node: its own disk is shared
    assert warning("/tmp/results", None) is None


def test_a_directory_that_cannot_be_locked_is_refused(tmp_path, monkeypatch) -> None:
    import errno
    import fcntl

    assert st.check_storage("embedding cache", tmp_path / "not" / "yet",
                            mounts_text="") is None  # locks fine here; nothing to classify

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(OutputError, match="cannot lock a directory in the embedding cache"
                                          ".*No locks available"):
        st.check_storage("embedding cache", tmp_path, mounts_text="")
    assert [p.name for p in tmp_path.iterdir()] == []  # the probe directory was removed


# --- the command line --------------------------------------------------------------------------

def test_slurm_options_without_the_slurm_executor_are_refused(tmp_path, capsys) -> None:
    rc = main(["reproduce", "--models", "glove-6b-50d", "--langs", "en", "--slurm-mem", "16G",
               "--out", str(tmp_path / "o"), "--results-dir", str(tmp_path / "r")])
    assert rc == 2
    assert "--slurm-mem: option(s) of --executor slurm, not of --executor local" in \
        capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_bad_slurm_values_exit_2_before_any_work(tmp_path, capsys) -> None:
    rc = main(["reproduce", "--models", "glove-6b-50d", "--langs", "en", "--executor", "slurm",
               "--slurm-time", "3 days", "--out", str(tmp_path / "o"),
               "--results-dir", str(tmp_path / "r")])
    assert rc == 2 and "--slurm-time '3 days'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_no_slurm_commands_here_is_a_clear_error(tmp_path, capsys, monkeypatch) -> None:
    pytest.importorskip("submitit")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no sbatch, squeue, srun
    rc = main(["reproduce", "--models", "glove-6b-50d", "--langs", "en", "--executor", "slurm",
               "--out", str(tmp_path / "o"), "--results-dir", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "sbatch, squeue, srun, scancel not found on PATH" in err


# --- resumption --------------------------------------------------------------------------------

@pytest.mark.slow
def test_resume_keeps_a_finished_run_and_recomputes_one_made_from_other_data(tmp_path,
                                                                             monkeypatch):
    import ncprobe.ncimp.reproduce as rp

    from .. import synthetic

    full = synthetic.build()
    data = tmp_path / "data"
    data.mkdir()
    (data / "scores.csv").write_text("nc,score\ngrey matter,0.1\n")

    def blob(path: Path) -> str:  # the id git gives a file, computed here by hand
        content = path.read_bytes()
        return hashlib.sha1(b"blob " + str(len(content)).encode() + b"\0" + content).hexdigest()
    computed = []

    def compute(cfg, **kw):
        computed.append(cfg.model)
        res = synthetic.one_run(full, "model-a", "en", n_boot=0)
        res.meta[0]["data_sources"] = {"scores.csv": blob(data / "scores.csv")}
        return res
    monkeypatch.setattr(rp, "compute", compute)
    monkeypatch.setattr(rp, "availability", lambda *a, **k: None)

    def run(**kw):
        return rp.reproduce(["model-a"], ["en"], results_dir=tmp_path / "r", data_dir=data,
                            n_boot=0, progress=False, **kw)
    first = run()
    assert computed == ["model-a"] and first.resumed == []
    again = run(resume=True)
    assert computed == ["model-a"]  # not computed again
    assert again.resumed == again.ran == [("model-a", "en", str(tmp_path / "r" /
                                                               "model-a-en-boot_0"))]
    assert again.results is not None and set(again.results.measures["model"]) == {"model-a"}
    run()  # the local executor's default: compute again
    assert computed == ["model-a"] * 2
    (data / "scores.csv").write_text("nc,score\ngrey matter,0.2\n")  # other data
    with pytest.raises(UsageError, match="holds another run .*the data files differ"):
        run(resume=True)  # not kept: computed again, and not written over the old run
    assert computed == ["model-a"] * 3
    run(resume=True, overwrite=True)
    assert computed == ["model-a"] * 4


# --- a real cluster (.ci/slurm.sh) --------------------------------------------------------------

def _no_cluster() -> str | None:
    """Why there is no SLURM cluster to test against, else None."""
    how = "start one with `eval \"$(bash .ci/slurm.sh start)\"` (as root), as .ci/run does"
    if not os.environ.get("SLURM_CONF"):
        return f"no SLURM cluster: SLURM_CONF is not set; {how}"
    if shutil.which("sinfo") is None or shutil.which("scontrol") is None:
        return f"no SLURM cluster: sinfo/scontrol not on PATH; {how}"
    try:
        import submitit  # noqa: F401
    except ImportError:
        return "submitit is not installed: pip install 'ncprobe[slurm]'"
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True)
    nodes = dict(line.split()[:2] for line in out.stdout.splitlines() if len(line.split()) > 1)
    if out.returncode != 0 or not ({"idle", "mixed", "allocated"} & set(nodes.values())):
        return f"the SLURM cluster of {os.environ['SLURM_CONF']} has no node up " \
               f"({(out.stdout + out.stderr).strip() or 'sinfo printed nothing'}); {how}"
    if socket.gethostname().split(".")[0] not in nodes:
        return (f"this machine is not a node of the cluster of {os.environ['SLURM_CONF']} "
                f"({', '.join(nodes)}): the tests kill a job's process by its PID; run them on "
                "the single-node cluster of .ci/slurm.sh")
    return None


def _job_pid(job: str) -> int | None:
    """The PID of the job's task (step 0, submitit's Python), from ``scontrol listpids``."""
    out = subprocess.run(["scontrol", "listpids", job], capture_output=True, text=True)
    for line in out.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 3 and parts[1] == job and parts[2] == "0":
            return int(parts[0])
    return None


class _Run:
    """One `ncprobe reproduce` in a subprocess, its output read as it comes."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "ncprobe", *argv], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(stream, into), daemon=True)
                         for stream, into in ((self.proc.stdout, self.out),
                                              (self.proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def finish(self, timeout: float = 400) -> tuple[int, str, str]:
        self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(10)
        return self.proc.returncode, "\n".join(self.out), "\n".join(self.err)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, raw_dir):
    """``reproduce --models glove-6b-50d,minilm --langs en`` three times, on a cold cache (the
    neutral contexts only, and 50 bootstrap samples, to keep it short): on the cluster with
    minilm's job killed mid-run (SIGKILL to its Python once it has opened its cache entry, about
    to encode), on the cluster again (resuming), then locally into other directories."""
    why = _no_cluster()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("sweep")
    env = {**os.environ, "NCPROBE_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1",
           "NCPROBE_DATA": str(raw_dir)}
    base = ["reproduce", "--models", "glove-6b-50d,minilm", "--langs", "en", "--n-boot", "50",
            "--context", "neut", "--data-dir", str(raw_dir), "--jobs", "2"]
    slurm = base + ["--executor", "slurm", "--results-dir", str(root / "results")]
    t0 = time.monotonic()
    first = _Run(slurm + ["--out", str(root / "figs-killed")], env)
    job, killed = None, None
    deadline = time.monotonic() + 300
    while killed is None and time.monotonic() < deadline and first.proc.poll() is None:
        if job is None:
            for line in list(first.err):
                m = re.match(r"slurm: minilm \(en\): job (\S+) ", line)
                if m:
                    job = m.group(1)
        entry = list((root / "cache").glob("minilm-*/fingerprint.json"))
        if job is not None and entry:  # mid-run: the model is loaded, the encoding begins
            pid = _job_pid(job)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                killed = pid
        time.sleep(0.05)
    first_result = first.finish()
    minilm_then = (root / "results" / "minilm-en-ctx_neut-boot_50").exists()
    glove = root / "results" / "glove-6b-50d-en-ctx_neut-boot_50" / "run.json"
    glove_stat = glove.stat() if glove.exists() else None
    t1 = time.monotonic()
    second = _Run(slurm + ["--out", str(root / "figs-slurm")], env).finish()
    t2 = time.monotonic()
    local = _Run(base + ["--results-dir", str(root / "results-local"),
                         "--out", str(root / "figs-local")], env).finish()
    t3 = time.monotonic()
    print(f"sweep: killed run {t1 - t0:.0f} s, rerun {t2 - t1:.0f} s, local {t3 - t2:.0f} s")
    return SimpleNamespace(root=root, job=job, killed=killed, first=first_result,
                           second=second, local=local, glove_stat=glove_stat,
                           glove=glove, minilm_then=minilm_then,
                           times=(t1 - t0, t2 - t1, t3 - t2))


@pytest.mark.slurm
@pytest.mark.slow
def test_a_task_killed_mid_run_is_reported_with_its_log(sweep) -> None:
    assert sweep.killed is not None, ("minilm's job was never seen running", sweep.first)
    rc, out, err = sweep.first
    assert rc == 1, err  # RunsFailed, after the report of what finished
    failed = [line for line in err.splitlines() if line.startswith("failed minilm (en): ")]
    assert len(failed) == 1, err
    assert f"job {sweep.job} ended FAILED without a result" in failed[0]
    log = Path(failed[0].split("; log: ")[1])
    assert log.is_file() and log.is_relative_to(sweep.root / "results" / "slurm-logs")
    assert "computed glove-6b-50d (en)" in out and "minilm" not in out
    assert not sweep.minilm_then
    readme = (sweep.root / "figs-killed" / "README.md").read_text(encoding="utf-8")
    assert "- minilm (en): failed: job" in readme  # the report names what failed
    assert "1 run(s) failed" in err and "run the same command again" in err


@pytest.mark.slurm
@pytest.mark.slow
def test_a_rerun_finishes_it_without_recomputing_the_finished_run(sweep) -> None:
    rc, out, err = sweep.second
    assert rc == 0, err
    assert "kept glove-6b-50d (en)" in out and "computed minilm (en)" in out
    # glove's results directory is the one the first run wrote, untouched
    now = sweep.glove.stat()
    assert (now.st_ino, now.st_mtime_ns) == (sweep.glove_stat.st_ino,
                                             sweep.glove_stat.st_mtime_ns)
    submitted = [line for line in err.splitlines() if re.match(r"slurm: .*: job ", line)]
    assert len(submitted) == 1 and submitted[0].startswith("slurm: minilm (en): job"), err
    assert (sweep.root / "results" / "minilm-en-ctx_neut-boot_50" / "run.json").is_file()


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "slurm-logs" not in p.relative_to(root).parts}


@pytest.mark.slurm
@pytest.mark.slow
def test_the_cluster_gives_the_files_a_local_run_gives(sweep) -> None:
    rc, out, err = sweep.local
    assert rc == 0, err
    results, local = _files(sweep.root / "results"), _files(sweep.root / "results-local")
    assert sorted(results) == sorted(local) and len(results) >= 2 * 10  # 2 runs, 9 tables +
    differ = [name for name in results if results[name] != local[name]]
    assert not differ, differ
    figs, figs_local = _files(sweep.root / "figs-slurm"), _files(sweep.root / "figs-local")
    assert sorted(figs) == sorted(figs_local)
    assert {"fig01_sent_cosines.png", "fig01_sent_cosines.pdf", "README.md"} <= set(figs)
    differ = [name for name in figs if figs[name] != figs_local[name]]
    assert not differ, differ


# --- a real cluster: what stops a reproduction, and which ncprobe its jobs run -----------------

@pytest.fixture
def cluster(tmp_path, monkeypatch, raw_dir) -> SimpleNamespace:
    """The running cluster of .ci/slurm.sh (skipped without one), an embedding cache of the
    test's own, and the ids of the jobs the cluster knew before the test."""
    why = _no_cluster()
    if why:
        pytest.skip(why)
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return SimpleNamespace(raw=raw_dir, before=set(_queue()))


def _queue() -> dict[str, tuple[str, str]]:
    """Every job the controller lists (finished ones for MinJobAge): id -> (state, reason)."""
    out = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T|%r"],
                         capture_output=True, text=True, check=True)
    return parse_squeue(out.stdout)


def _reproduce(tmp_path: Path, raw: Path, executor: SlurmExecutor):
    from ncprobe.ncimp.reproduce import reproduce

    return reproduce(["glove-6b-50d"], ["en"], results_dir=tmp_path / "results",
                     data_dir=raw, progress=False, n_boot=10, contexts="neut",
                     executor=executor)


@pytest.mark.slurm
def test_slurm_cluster_a_controller_that_does_not_answer_is_named(cluster, tmp_path,
                                                            monkeypatch) -> None:
    """The cluster's own configuration with its controller moved to a port where nothing
    listens: the SLURM client is here, the controller is not."""
    with socket.socket() as s:  # a port free now, and nothing listening on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = Path(os.environ["SLURM_CONF"]).read_text()
    dead = tmp_path / "slurm.conf"
    dead.write_text(re.sub(r"(?m)^SlurmctldPort=.*$", f"SlurmctldPort={port}", conf))
    monkeypatch.setenv("SLURM_CONF", str(dead))
    t0 = time.monotonic()
    with pytest.raises(UsageError) as err:
        _reproduce(tmp_path, cluster.raw, SlurmExecutor())
    said = str(err.value)
    assert "the SLURM controller (slurmctld) cannot be reached" in said, said
    assert f"SLURM_CONF={dead}" in said and "--slurm-partition" not in said
    assert not (tmp_path / "results").exists()
    assert time.monotonic() - t0 < 15  # not 9 s for sinfo, then 9 s more for sbatch


@pytest.mark.slurm
def test_slurm_cluster_an_impossible_request_is_exit_2_and_leaves_nothing_queued(cluster,
                                                                          tmp_path) -> None:
    # more CPUs than the node has: refused from sinfo, before anything is submitted
    most = max(int(line.split("|")[1]) for line in subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%N|%c"], capture_output=True, text=True,
        check=True).stdout.split())
    executor = SlurmExecutor(sbatch=[f"cpus-per-task={most + 1}"], wait=20, poll_s=0.5)
    with pytest.raises(UsageError, match=re.escape(
            f"--slurm-option cpus-per-task={most + 1}: no node of the default partition "
            f"has {most + 1} CPUs (the most: {most}")):
        _reproduce(tmp_path, cluster.raw, executor)
    assert set(_queue()) == cluster.before
    # two nodes on a one-node cluster: sinfo cannot tell; the job pends for
    # PartitionConfig (then PartitionNodeLimit), which stops the wait (exit 2) and cancels it
    executor = SlurmExecutor(sbatch=["nodes=2"], wait=20, poll_s=0.5)
    with pytest.raises(UsageError) as err:
        _reproduce(tmp_path, cluster.raw, executor)
    said = str(err.value)
    assert re.search(r"pending for Partition(Config|NodeLimit)", said), said
    assert "--slurm-option nodes=2" in said, said
    new = {job: state for job, (state, _) in _queue().items() if job not in cluster.before}
    assert list(new.values()) == ["CANCELLED"], new


@pytest.mark.slurm
@pytest.mark.slow
def test_slurm_cluster_sigterm_while_waiting_cancels_the_jobs(cluster, tmp_path) -> None:
    env = {**os.environ, "NCPROBE_DATA": str(cluster.raw)}
    run = _Run(["reproduce", "--models", "glove-6b-50d", "--langs", "en", "--executor",
                "slurm", "--slurm-option", "begin=now+1hour", "--n-boot", "10",
                "--results-dir", str(tmp_path / "results"), "--out", str(tmp_path / "o")],
               env)
    job = None
    deadline = time.monotonic() + 60
    while job is None and time.monotonic() < deadline and run.proc.poll() is None:
        for line in list(run.err):
            m = re.match(r"slurm: glove-6b-50d \(en\): job (\S+) ", line)
            if m:
                job = m.group(1)
        time.sleep(0.05)
    try:
        assert job is not None, run.err
        assert _queue()[job][0] == "PENDING"
        run.proc.send_signal(signal.SIGTERM)
        rc, _, err = run.finish(timeout=60)
        assert rc == 143, err
        assert "stopped by SIGTERM" in err and f"cancelling job(s) {job}" in err
        assert _queue()[job][0] == "CANCELLED"
    finally:  # whatever failed above, no job of this test stays queued for an hour
        if run.proc.poll() is None:
            run.proc.kill()
        if job is not None:
            subprocess.run(["scancel", job], capture_output=True)


@pytest.mark.slurm
@pytest.mark.slow
def test_slurm_cluster_jobs_import_the_ncprobe_that_submitted_them(cluster, tmp_path,
                                                             monkeypatch) -> None:
    """Submitted from a directory holding a folder named ncprobe (a checkout's parent, an
    old copy), the job still runs the submitter's ncprobe; a job given another one on its
    PYTHONPATH refuses to run it, naming both."""
    import ncprobe

    here = tmp_path / "here"
    (here / "ncprobe").mkdir(parents=True)
    (here / "ncprobe" / "__init__.py").write_text("raise ImportError('the wrong ncprobe')\n")
    monkeypatch.chdir(here)
    rep = _reproduce(tmp_path, cluster.raw, SlurmExecutor(poll_s=0.5, settle_s=2))
    assert rep.failed == [] and [(m, lang) for m, lang, _ in rep.ran] == \
        [("glove-6b-50d", "en")], rep.failed
    # another ncprobe, importable, first on the job's path
    other = tmp_path / "other"
    (other / "ncprobe").mkdir(parents=True)
    (other / "ncprobe" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(other))
    rep = _reproduce(tmp_path / "2", cluster.raw, SlurmExecutor(poll_s=0.5, settle_s=2))
    assert rep.ran == [] and len(rep.failed) == 1, rep
    why = rep.failed[0][2]
    assert f"the job imported ncprobe from {other / 'ncprobe' / '__init__.py'}, not " \
           f"{os.path.realpath(ncprobe.__file__)}, the ncprobe that submitted it" in why, why
