"""Drawing a report's figures into files: the formats a report writes (:data:`FORMATS`,
:func:`check_formats`), one figure saved in every format (:func:`figure_bytes`), and the worker
processes that draw figures beside the calling one (:class:`FigureWorkers`), and the same
guarded worker processes for other work (:func:`worker_pool`).

Every probe's report saves its figures through :func:`figure_bytes`, so that the same input
gives the same bytes whatever the report. The workers are fresh processes (``spawn``) that
draw with the calling process's matplotlib settings: the files are the same whatever the
number of processes. This module imports neither matplotlib nor the figures when imported (a
worker starts light, ignores Ctrl-C and watches its parent from the start; matplotlib is
loaded by its first task, :func:`_warm`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from typing import TYPE_CHECKING, Iterator, Sequence

from .errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import ProcessPoolExecutor

log = logging.getLogger(__name__)


#: The figure formats a report writes (``--format``): matplotlib's, less ``pgf`` (it needs a
#: LaTeX installation) and ``raw``/``rgba`` (pixels without a header: no viewer opens them).
FORMATS = ("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


def check_formats(formats: Sequence[str] | str) -> tuple[str, ...]:
    """The figure formats of ``formats`` (a sequence, or a comma list as ``--format`` takes),
    checked before any drawing.

    Raises:
        UsageError: no format, an empty one, one given twice, or one that is not in
            :data:`FORMATS` (a path such as ``../x`` included); the message names ``--format``
            and the formats allowed.
    """
    given = tuple(formats.split(",")) if isinstance(formats, str) else tuple(formats)
    allowed = f"give a comma list of {', '.join(FORMATS)} (default: png,pdf)"
    if not given:
        raise UsageError(f"--format: no figure format given; {allowed}")
    for fmt in given:
        if not isinstance(fmt, str) or fmt not in FORMATS:
            what = "an empty format" if fmt == "" else f"{fmt!r} is not a figure format"
            raise UsageError(f"--format {','.join(map(str, given))}: {what}; {allowed}")
    twice = sorted({fmt for fmt in given if given.count(fmt) > 1})
    if twice:
        raise UsageError(f"--format {','.join(given)}: {', '.join(twice)} given twice; "
                         "give each format once")
    return given


def figure_bytes(fig, formats: Sequence[str], dpi: int) -> dict[str, bytes]:
    """``fig`` saved in every format of ``formats``: ``{format: bytes}``, as every report
    saves its figures (a tight bounding box; PDFs without a creation date, so that the same
    input gives the same files).

    The figure is laid out once, at ``dpi``, and that layout is kept for every format (its
    layout engine is removed): the figure is meant to be dropped afterwards.
    """
    # lay the figure out once, at the saved resolution, and keep that layout for every
    # format: each savefig would otherwise run the constrained layout twice (once more
    # for the tight bounding box). Vector formats, which matplotlib would lay out at
    # 72 dpi, get the positions of the raster ones
    fig.set_dpi(dpi)
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    blobs = {}
    for fmt in formats:
        # no creation date in PDFs: the same results give the same files
        meta = {"CreationDate": None} if fmt == "pdf" else None
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight", metadata=meta)
        blobs[fmt] = buf.getvalue()
    return blobs


def _warm() -> None:
    """A worker's first task, run while its parent computes: import what drawing needs and
    draw one small figure, so that fonts and the renderers are loaded before the first
    real figure."""
    import matplotlib

    matplotlib.use("Agg")  # a worker: ncprobe's own process

    from .plots.theme import new_figure, style

    with style():
        fig = new_figure(figsize=(1, 1), layout="constrained")
        ax = fig.add_subplot()
        ax.boxplot([[0.0, 1.0, 2.0]])
        ax.set_title("A$_{x}$")
        for fmt in ("png", "pdf"):
            fig.savefig(io.BytesIO(), format=fmt, bbox_inches="tight")


#: ``prctl`` option of Linux: the signal a process gets when its parent dies.
_PR_SET_PDEATHSIG = 1
#: Seconds between two looks at the parent, where the kernel cannot signal its death.
_PARENT_POLL_SECONDS = 0.5


def _worker_init(parent: int) -> None:
    """A figure worker's set-up: ignore Ctrl-C, and end when ``parent`` (the process that
    started it) ends.

    Ctrl-C reaches every process of the terminal: the caller handles it (it stops the
    workers after their current figure), so a worker ignores it. A caller killed outright
    (SIGKILL, the OOM killer) never stops its workers; left alone, they would wait for work
    forever. On Linux the kernel kills the worker when its parent dies (``prctl``
    ``PR_SET_PDEATHSIG``; strictly, when the thread that started the pool ends: the pool is
    started and used within one call); elsewhere (macOS, the BSDs) a daemon thread looks at
    the parent's process id twice a second and ends the worker when it changes (the worker
    was handed to another parent). Either way, a parent already gone when the worker starts
    ends it at once. The multiprocessing resource tracker needs nothing: it ends by itself
    once the parent and the workers are gone (its pipe closes).
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not _kill_with_parent():
        import threading

        def watch() -> None:
            import time

            while os.getppid() == parent:
                time.sleep(_PARENT_POLL_SECONDS)
            os._exit(1)

        threading.Thread(target=watch, name="ncprobe-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


def _kill_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux); whether it could."""
    import sys

    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc with prctl (e.g. a static build)
        return False


#: The most processes a command's ``--jobs`` starts by default.
MAX_DEFAULT_JOBS = 4


def default_jobs() -> int:
    """The default of every ``--jobs``: the CPUs this process may use (:func:`usable_cpus`:
    its affinity mask, e.g. under SLURM or ``taskset``), at most :data:`MAX_DEFAULT_JOBS`."""
    return min(usable_cpus(), MAX_DEFAULT_JOBS)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one, e.g.
    under SLURM or ``taskset``; else every CPU), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows: no affinity masks
        return max(1, os.cpu_count() or 1)


class FigureWorkers:
    """Worker processes that draw figures for :func:`ncprobe.ncimp.report.write_report`.

    Started on entering the ``with`` block: each imports matplotlib and seaborn at once,
    so that a caller with other work first (``reproduce`` computes) overlaps the
    workers' start with it. ``jobs`` counts the calling process too: ``jobs - 1``
    workers are started, none for ``jobs=1``.

    Never more processes than there are figures to draw (a process more would only start,
    import matplotlib and wait: hundreds of MB each) or CPUs this process may use
    (:func:`usable_cpus`): :attr:`jobs` is ``jobs`` capped so, :attr:`asked` what was given.

    Args:
        jobs: processes that draw figures, this one included (1 or more).
        figures: the most figures the report will draw (a probe's report knows its count:
            NCIMP's, :func:`ncprobe.ncimp.report.most_figures`); ``None``: not known, the
            processes are capped by the CPUs alone.
    """

    def __init__(self, jobs: int, *, figures: int | None = None) -> None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise UsageError(f"jobs={jobs!r}: give a whole number of processes, 1 or more")
        self.asked = jobs
        cpus = usable_cpus()
        self.jobs = max(1, min(jobs, cpus, jobs if figures is None else figures))
        if self.jobs < jobs:
            log.info("jobs=%d: %d process(es) draw the figures (%s figure(s) at most, %d "
                     "CPU(s) usable)", jobs, self.jobs,
                     "any number of" if figures is None else figures, cpus)
        self.pool: ProcessPoolExecutor | None = None  # started by __enter__ for jobs > 1

    def __enter__(self) -> "FigureWorkers":
        if self.jobs > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=self.jobs - 1,
                                            mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_worker_init,
                                            initargs=(os.getpid(),))
            for _ in range(self.jobs - 1):
                self.pool.submit(_warm)
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            # an exception (Ctrl-C included): queued figures are dropped, not drawn
            self.pool.shutdown(wait=True, cancel_futures=exc[0] is not None)
            self.pool = None


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` fresh processes (``spawn``) guarded as the figure workers are
    (:func:`_worker_init`): each ignores Ctrl-C (the caller stops the pool: no
    ``KeyboardInterrupt`` traceback from a worker) and ends with the caller, even one killed
    outright (SIGKILL), so that no worker is left behind. Leaving the block waits for the
    workers; an exception (Ctrl-C included) drops the tasks not yet started. The AStitch
    probe fits its cells in one (``run astitch --jobs N``).

    Raises:
        UsageError: ``workers`` < 1.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise UsageError(f"workers={workers!r}: give a whole number of processes, 1 or more")
    pool = ProcessPoolExecutor(max_workers=workers,
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_init, initargs=(os.getpid(),))
    failed = True
    try:
        yield pool
        failed = False
    finally:
        pool.shutdown(wait=True, cancel_futures=failed)
