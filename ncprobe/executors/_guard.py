"""What a cluster job calls first: check that it imports the ncprobe that submitted it.

A job's Python finds ``ncprobe`` on its own ``sys.path``, whose first entry is the job's
working directory: a folder named ``ncprobe`` there (a checkout's parent, an old copy) would
be imported instead of the package that submitted the job, and run code the user never
installed, or fail half-way (``ModuleNotFoundError: ncprobe.data.stimuli``). The SLURM
executor runs each job in its log folder and puts the submitting package's parent on the
job's ``PYTHONPATH`` where needed; :func:`guarded_run` verifies the outcome on the node.

This module is pickled **by value** (cloudpickle), so :func:`guarded_run` reaches the node
as code and runs before anything of ``ncprobe`` is imported there: it must use the standard
library only, imported inside the function. The task travels as bytes, unpickled only once
the right ``ncprobe`` is known to be the one imported (unpickling a :class:`Task` imports
``ncprobe``).
"""

from __future__ import annotations

from typing import Any


def guarded_run(expected: str, task_pickle: bytes) -> Any:
    """Import ``ncprobe``; refuse unless it is the package at ``expected`` (its
    ``__init__.py``, resolved); then run the pickled task with that package's ``run_task``.

    Raises:
        ImportError: ``ncprobe`` cannot be imported here, or another ``ncprobe`` was
            (naming both files, the working directory and what to do).
    """
    import importlib
    import os
    import pickle
    import sys

    where = (f"working directory {os.getcwd()}, sys.path starting "
             f"{os.pathsep.join(sys.path[:3])}")
    advice = ("run the jobs with the Python environment that submitted them, at the same "
              "path on every node, and keep other copies of ncprobe off PYTHONPATH")
    try:
        package = importlib.import_module("ncprobe")
    except Exception as e:  # noqa: BLE001 - whatever a wrong package raised on import
        raise ImportError(f"the job cannot import ncprobe ({type(e).__name__}: {e}); it "
                          f"should import {expected} ({where}): {advice}") from None
    got = getattr(package, "__file__", None)
    if got is None or os.path.realpath(got) != expected:
        found = got or f"a folder without __init__.py, {list(getattr(package, '__path__', []))}"
        raise ImportError(f"the job imported ncprobe from {found}, not {expected}, the "
                          f"ncprobe that submitted it ({where}): {advice}")
    task = pickle.loads(task_pickle)
    return importlib.import_module("ncprobe.executors").run_task(task)
