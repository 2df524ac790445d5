"""Results directories on disk: parquet tables and ``run.json``, written as one unit, read back
verified, and the safety of the directories they are written to.

A results directory is written as one unit (:func:`write_results`, behind
:meth:`Results.to_parquet <ncprobe.ncimp.results.Results.to_parquet>`): into a fresh temporary
directory beside the target, which is then renamed into place. Its ``run.json`` and every
table (parquet schema metadata ``ncprobe.run_id``) carry the same run id (:func:`run_id`), a
hash of the content: of each table's rows (its digest, kept in ``run.json``) and of the runs'
metadata. :func:`read_results` (behind :meth:`Results.load
<ncprobe.ncimp.results.Results.load>`) checks every table's columns and value types,
recomputes the run id and the SHA-256 of every file, and refuses a directory edited since
ncprobe wrote it, naming what differs.

Directory safety: :func:`check_target` (never replace what must not be, never write inside
another results directory: :func:`ncprobe.owned.enclosing_results`), :func:`inspect_dir`
(what a path holds), :func:`check_writable` (refuse an unwritable path before any work;
:func:`model_runs`: both, for a probe's runs of one model each, with what ``run.json`` records
of them), and the tidying of what killed writes left (:func:`tidy_leftovers`); the temporary and
moved-aside directories, their names and locks are those of every directory ncprobe owns
(:mod:`ncprobe.owned`). :func:`find_results` and :func:`drop_excluded` name the directories
that ``ncprobe report`` and ``compare`` read.

Results of a development version of ncprobe (results formats 1-3) are refused, never read: the
message names the directory and says to run the command that wrote it again.

Nothing here knows the :class:`~ncprobe.ncimp.results.Results` class: the tables go in and come out
as a mapping of DataFrames by name, with the runs' metadata.

Every probe's results are such a directory. A :class:`Layout` says which tables a probe
writes, their columns and which hold numbers, what each run's config must name and the
config class whose defaults fill it; each probe's results class declares its own
(``layout``: NCIMP's in :mod:`ncprobe.ncimp.results`), and every function here that needs
one is given it: this module names no probe and asks no registry. ``run.json`` names the
probe (key ``probe``, part of the run id) unless its layout says not to (``named``: NCIMP's,
whose results were written before probes were named), so results of one probe are never
read as another's; :func:`probe_of` returns the name ``run.json`` gives, ``None`` where it
gives none (the probe registry, :mod:`ncprobe.probes`, says whose such results are).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import logging
import os
import shutil
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError, UsageError
from ..owned import (
    DEVELOPMENT,
    aside_name,
    aside_re,
    enclosing_results,
    locked_temp_dir,
    remove_if_only,
    remove_temp_dirs,
)
from ..schema import RESULT_TABLES
from ..transform import META_KEY as TRANSFORM_KEY

log = logging.getLogger(__name__)

#: NCIMP's tables (:data:`ncprobe.schema.RESULT_TABLES`; its layout:
#: :data:`ncprobe.ncimp.results.NCIMP_LAYOUT`), for the code that takes them from here.
TABLES = RESULT_TABLES
#: The format of a results directory: the run id in ``run.json`` and in every table, each
#: table's digests in ``run.json`` (what was written is checked when read), the gold score's
#: column named :data:`~ncprobe.schema.GOLD`. Formats 1-3 were development versions' (refused).
RESULTS_FORMAT = 4
RUN_ID_KEY = b"ncprobe.run_id"
#: Keys of a run's ``meta`` that say how this computation went, not what it computed: how
#: many items were encoded now (the others came from the embedding cache) and the cache
#: shards found unusable (:attr:`Results.notes <ncprobe.ncimp.results.Results.notes>` lists them).
#: They are kept in memory only: never written to ``run.json``, never part of the run id.
RUN_LOG_KEYS = ("encoded", "cache_problems")
#: Config fields that say where and how fast a run ran, not what it computed: they do not
#: make a different run (nor a different default directory name).
NOT_IDENTITY = ("batch_size", "batch_tokens", "device")

#: A probe's tables by name (every name of its layout's ``tables``).
Frames = Mapping[str, pd.DataFrame]


@dataclass(frozen=True)
class Layout:
    """What one probe's results directory holds.

    Attributes:
        probe: the probe's name (``ncimp``, ``idiolink``); ``run.json`` records it (key
            ``probe``) when ``named``.
        tables: the tables, in the order they are written (``<table>.parquet``).
        columns: per table, the columns every reader needs.
        numeric: the columns of ``columns`` that hold numbers (or booleans).
        run_keys: the keys of each run's ``config`` that must be text.
        named: whether ``run.json`` names the probe; NCIMP's does not (its results were
            written before probes were named: a ``run.json`` without ``probe`` is read by
            the layout that is not ``named``).
        report_label: the probe's report in words (``NCIMP report``), in the messages of its
            report writer (a report's kind is its probe's name).
        version: the version of this probe's tables, raised when a table gains a column a
            reader needs; ``run.json`` records it (key ``version``) from 2 on, and results of
            an earlier version are refused with what to do (recompute them), never read as
            damaged.
        config: the probe's config class (a dataclass): the defaults of its fields fill a
            run's ``config`` where ``run.json`` leaves one out (:func:`run_identity`);
            ``None``: no defaults.
        optional: tables of ``tables`` written only when they hold rows (an opt-in
            measure's, e.g. AStitch's ``mdl``): a directory without one is read with it
            empty, and its absence leaves the files and the run id of the other tables as
            they were.
    """

    probe: str
    tables: tuple[str, ...]
    columns: Mapping[str, tuple[str, ...]]
    numeric: frozenset[str]
    run_keys: tuple[str, ...] = ("model",)
    named: bool = True
    report_label: str = ""
    version: int = 1
    config: type | None = None
    optional: frozenset[str] = frozenset()


def written_tables(frames: Frames, layout: Layout) -> tuple[str, ...]:
    """The tables of ``frames`` a results directory holds: every table of ``layout`` but
    an optional one without rows (:attr:`Layout.optional`)."""
    return tuple(n for n in layout.tables if n not in layout.optional or len(frames[n]))


def _is_result_file(name: str) -> bool:
    """Whether ``name`` is a file a results directory of any probe may hold: ``run.json``
    or a table (``<table>.parquet``)."""
    return name == "run.json" or (name.endswith(".parquet") and not name.startswith("."))


def probe_of(path: str | Path) -> str | None:
    """The probe whose results the directory ``path`` holds, as its ``run.json`` names it;
    ``None`` where it names none (results of the probe whose layout is not ``named``: the
    registry says which, :func:`ncprobe.probes.results_probe`).

    Raises:
        UsageError: no run.json there. DataError: an unreadable run.json.
    """
    meta_file = Path(path) / "run.json"
    if not meta_file.is_file():
        raise UsageError(f"{path}: not a results directory (no run.json)")
    probe = _read_run_json(meta_file).get("probe")
    if probe is not None and not isinstance(probe, str):
        raise DataError(f"'probe' is {probe!r}, not a name: the file was edited or damaged",
                        file=str(meta_file))
    return probe


def results_by_probe(paths, exclude: Iterable[str | os.PathLike] = (), *,
                     require_match: bool = False) -> dict[str | None, list[Path]]:
    """Every results directory at or below ``paths`` (less those at or below ``exclude``; one
    may leave out nothing unless ``require_match``: :func:`drop_excluded`), by the probe whose
    results it holds (:func:`probe_of`: ``None`` for a ``run.json`` that names none), in the
    order found."""
    found = find_results(paths)
    if exclude:
        found = drop_excluded(found, exclude, require_match=require_match)
    by_probe: dict[str | None, list[Path]] = {}
    for d in found:
        by_probe.setdefault(probe_of(d), []).append(d)
    return by_probe


def mixed_probes_message(by_probe: Mapping[str, list[Path]], advice: str,
                         keep: Iterable[str] | None = None) -> str:
    """The refusal of results of several probes read together: each probe's directories,
    ``advice``, then, per probe (of ``keep``, when given), the ``--exclude`` options that keep
    only its results."""
    def shown(dirs: list[Path], limit: int = 6) -> str:
        more = f" and {len(dirs) - limit} more" if len(dirs) > limit else ""
        return ", ".join(map(str, dirs[:limit])) + more

    held = "; ".join(f"{probe}: {shown(dirs)}" for probe, dirs in sorted(by_probe.items()))
    kept = sorted(by_probe) if keep is None else sorted(set(keep) & set(by_probe))
    hints = []
    for probe in kept:
        others = [d for p, dirs in sorted(by_probe.items()) if p != probe for d in dirs]
        hints.append(f"for the {probe} results alone, add "
                     + " ".join(f"--exclude {d}" for d in others[:6])
                     + (f" (and the {len(others) - 6} other directories listed)"
                        if len(others) > 6 else ""))
    return (f"these directories hold results of different probes ({held}): {advice}"
            + (f". Leave one probe's directories out: {'; '.join(hints)}" if hints else ""))


def table_entries(frames: Frames, layout: Layout) -> dict[str, dict]:
    """Per table, what the run id is made of: its rows and its content digest."""
    return {name: {"rows": len(frames[name]), "content": _table_digest(frames[name])}
            for name in written_tables(frames, layout)}


def run_id(frames: Frames, meta: list[dict], layout: Layout) -> str:
    """A hash of every table's rows and of ``meta`` (less :data:`RUN_LOG_KEYS`): equal
    results give equal ids, however they were computed."""
    return _run_id(table_entries(frames, layout), _stored_meta(meta), layout)


def write_results(frames: Frames, meta: list[dict], path: str | Path, *, layout: Layout,
                  overwrite: bool = False) -> Path:
    """Write ``frames`` and ``meta`` as a results directory at ``path``: what
    :meth:`Results.to_parquet <ncprobe.ncimp.results.Results.to_parquet>` does (see it for the
    arguments and errors); ``layout`` names the probe and its tables.
    """
    from .._io import UNWRITABLE_ERRNOS, output_error

    try:
        target = Path(path).expanduser().resolve()  # a link as --out: write where it points
    except RuntimeError as e:  # Python < 3.13: a symbolic-link loop
        raise output_error(OSError(errno.ELOOP, str(e)), path,
                           what="results directory") from None
    try:
        return _write_dir(frames, meta, target, overwrite, layout)
    except OSError as e:
        if e.errno not in UNWRITABLE_ERRNOS:
            raise
        raise output_error(e, target, what="results directory") from e


def _write_dir(frames: Frames, meta: list[dict], target: Path, overwrite: bool,
               layout: Layout) -> Path:
    """:func:`write_results` into the resolved ``target`` (OSErrors left to the caller)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .._io import dir_lock, file_sha256

    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    with dir_lock(parent):  # no swap of another writer halfway through meanwhile
        tidy_leftovers(parent, target.name)
    # early: before any writing
    check_target(target, meta, layout=layout, overwrite=overwrite)
    runs = _stored_meta(meta)
    tables = table_entries(frames, layout)
    rid = _run_id(tables, runs, layout)
    tmp: Path | None = None
    aside = None
    writing = contextlib.ExitStack()
    try:
        # locked while written: another writer never takes it for a killed run's leftover
        tmp = locked_temp_dir(parent, target.name, writing)
        for name in tables:
            table = pa.Table.from_pandas(frames[name], preserve_index=False)
            table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                   RUN_ID_KEY: rid.encode()})
            with open(tmp / f"{name}.parquet", "wb") as fh:
                pq.write_table(table, fh)
                fh.flush()
                os.fsync(fh.fileno())
            tables[name]["sha256"] = file_sha256(tmp / f"{name}.parquet")
        with open(tmp / "run.json", "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"format": RESULTS_FORMAT, **_probe_key(layout),
                                 "run_id": rid, "tables": tables, "runs": runs}, indent=2,
                                ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        with dir_lock(parent):  # the check and the swap as one step among ncprobe writers
            check_target(target, meta, layout=layout, overwrite=overwrite)
            if os.path.lexists(target):
                aside = parent / aside_name(target.name)
                os.rename(target, aside)
            os.rename(tmp, target)
    except BaseException:
        if aside is not None and not os.path.lexists(target):
            os.rename(aside, target)  # failed between the two renames: put it back
            aside = None
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # our own fresh directory, nothing else
        raise
    finally:
        writing.close()
    if aside is not None:
        _remove_results_dir(aside)
    return target



def read_results(path: str | Path, *, layout: Layout, accept_edited: bool = False
                 ) -> tuple[dict[str, pd.DataFrame], list[dict]]:
    """The tables (by name) and the runs' metadata of the results directory ``path``, checked:
    what :meth:`Results.load <ncprobe.ncimp.results.Results.load>` does (see it for
    the arguments and errors); ``layout``: the probe whose results are expected (another
    probe's directory is a UsageError naming it). A directory of a development version of
    ncprobe (results formats 1-3) is a DataError saying so.
    """
    src = Path(path)
    meta = _checked_run_json(src, layout)
    rid, stored = meta["run_id"], meta["tables"]
    edited: dict[str, str] = {}  # file -> how it differs from what ncprobe wrote
    if _run_id({n: {"rows": stored[n]["rows"], "content": stored[n]["content"]}
                for n in _stored_tables(stored, layout)}, meta["runs"], layout) != rid:
        edited["run.json"] = "its runs or digests no longer give its run id"
    tables, strays = _read_tables(src, layout, rid, stored, edited)
    return tables, _verdict(src, meta["runs"], rid, strays, edited, accept_edited)


def _checked_run_json(src: Path, layout: Layout) -> dict:
    """``run.json`` of the results directory ``src``, checked: of this ncprobe's format, of
    ``layout``'s probe, its runs described, the run id and every table's digests there."""
    meta_file = src / "run.json"
    if not meta_file.is_file():
        raise UsageError(f"{src}: not a results directory (no run.json); write one with "
                         "`ncprobe compute --out DIR` or Results.to_parquet(DIR)")
    meta = _read_run_json(meta_file)
    fmt = meta.get("format")
    if isinstance(fmt, int) and not isinstance(fmt, bool) and 1 <= fmt < RESULTS_FORMAT:
        raise DataError(f"results format {fmt}, {DEVELOPMENT} to write {src} in format "
                        f"{RESULTS_FORMAT}", file=str(meta_file))
    if fmt != RESULTS_FORMAT:
        raise DataError(f"results format {fmt!r}; this ncprobe reads format {RESULTS_FORMAT}: "
                        "recompute the results with this version, or read them with the "
                        "ncprobe that wrote them", file=str(meta_file))
    probe = meta.get("probe")
    if not _holds(layout, probe):
        raise UsageError(f"{src} holds {_whose(probe)}, not of the {layout.probe!r} probe; "
                         f"{_read_with(probe)}")
    version = meta.get("version", 1)
    if version != layout.version:
        newer = isinstance(version, int) and not isinstance(version, bool) and (
            version > layout.version)
        raise DataError(
            f"{layout.probe} results of version {version!r}, written by "
            f"{'a newer' if newer else 'an earlier'} ncprobe; this ncprobe reads version "
            f"{layout.version} (its tables have other columns): "
            + ("read them with the ncprobe that wrote them" if newer else
               f"recompute them with this version (the command that wrote {src}, with "
               "--overwrite), or read them with the ncprobe that wrote them"),
            file=str(meta_file))
    _check_runs(meta["runs"], meta_file, layout.run_keys)
    if not isinstance(meta.get("run_id"), str):
        raise DataError("no run_id: the file was edited or damaged; recompute the results",
                        file=str(meta_file))
    stored = meta.get("tables")
    if not _digests_ok(stored, _stored_tables(stored if isinstance(stored, dict) else {},
                                              layout)):
        raise DataError("no digest for every table (key 'tables'): the file was edited or "
                        "damaged; recompute the results", file=str(meta_file))
    return meta


def _read_tables(src: Path, layout: Layout, rid: str, stored: Mapping[str, dict],
                 edited: dict[str, str]) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """Every table of ``src``, checked, and the tables of other runs (file -> their run id);
    the tables edited since ncprobe wrote them are added to ``edited`` (file -> how)."""
    tables, strays = {}, {}
    for name in layout.tables:
        if name not in _stored_tables(stored, layout):  # an optional table not written
            tables[name] = pd.DataFrame(columns=list(layout.columns[name]))
            continue
        f = src / f"{name}.parquet"
        tables[name], digest, owner = _read_table(f)
        _check_table(name, tables[name], f, layout)
        if owner is None:  # e.g. df.to_parquet: pandas keeps no metadata of ncprobe's
            edited[f.name] = ("rewritten by another program: ncprobe's run id is gone "
                              "from its parquet metadata")
        elif owner.decode(errors="replace") != rid:
            strays[f.name] = owner.decode(errors="replace")
        elif digest != stored[name]["sha256"]:
            rows, now = stored[name]["rows"], len(tables[name])
            edited[f.name] = ("its content differs from the digest in run.json: "
                              + (f"ncprobe wrote {rows} rows, it holds {now}" if rows != now
                                 else f"the same {rows} rows, other values"))
    return tables, strays


def _read_table(f: Path) -> tuple[pd.DataFrame, str, bytes | None]:
    """The table in the parquet file ``f``, the SHA-256 of the file, and the run id in its
    metadata (``None``: none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not f.is_file():
        raise DataError(f"{f.name} is missing: the results directory is incomplete; "
                        "recompute it", file=str(f))
    try:
        # read once: the bytes hashed are the bytes parsed (one read, not three)
        data = f.read_bytes()
        owner = (pq.read_schema(pa.BufferReader(data)).metadata or {}).get(RUN_ID_KEY)
        table = pd.read_parquet(io.BytesIO(data))
    except (OSError, ValueError, TypeError, pa.ArrowException) as e:
        raise DataError(f"cannot be read as parquet ({e}); recompute the results",
                        file=str(f)) from None
    return table, hashlib.sha256(data).hexdigest(), owner


def _verdict(src: Path, runs: list[dict], rid: str, strays: Mapping[str, str],
             edited: Mapping[str, str], accept_edited: bool) -> list[dict]:
    """The runs of ``src`` as read: refused (DataError) when tables of other runs or edits
    were found, unless ``accept_edited`` (then each run's ``edited`` names those files)."""
    problems = []
    if strays:
        listed = "; ".join(f"{n}: {o}" for n, o in strays.items())
        problems.append(f"tables of different runs in one directory: run.json belongs to "
                        f"run {rid}, but {listed} (copied from another results "
                        "directory)")
    if edited:
        problems.append("edited since ncprobe wrote it: "
                        + "; ".join(f"{n} ({why})" for n, why in edited.items()))
    if not problems:
        return runs
    if not accept_edited:
        raise DataError(". ".join(problems) + ". Recompute the results, or read them as "
                        "edited with --accept-edited-results (Python: "
                        "Results.load(path, accept_edited=True))", file=str(src))
    log.warning("%s: %s; read as edited (accept_edited)", src, ". ".join(problems))
    what = sorted({*strays, *edited})
    return [{**m, "edited": list(dict.fromkeys([*m.get("edited", []), *what]))} for m in runs]


def _read_run_json(meta_file: Path) -> dict:
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"cannot be read ({e}); recompute the results",
                        file=str(meta_file)) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("runs"), list):
        raise DataError("not an ncprobe run.json (no list of runs)", file=str(meta_file))
    return meta


def _table_digest(df: pd.DataFrame) -> str:
    """SHA-256 of a table's content: its columns, their types and every row, in order."""
    h = hashlib.sha256()
    h.update(f"{list(df.columns)}\0{[str(t) for t in df.dtypes]}\0".encode())
    try:
        h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    except TypeError:  # unhashable cells (lists...): hash their text instead
        h.update(df.to_csv(index=False).encode())
    return h.hexdigest()


def _stored_meta(meta: list[dict]) -> list[dict]:
    """The runs' metadata as ``run.json`` holds it: less :data:`RUN_LOG_KEYS`, in JSON's
    types (tuples as lists, paths as text), so that what is hashed is what is read back."""
    kept = [{k: v for k, v in m.items() if k not in RUN_LOG_KEYS} for m in meta]
    return json.loads(json.dumps(kept, ensure_ascii=False, default=str))


def _holds(layout: Layout, probe: str | None) -> bool:
    """Whether a ``run.json`` naming the probe ``probe`` (``None``: naming none) holds
    results of ``layout``'s probe."""
    return probe == layout.probe or (probe is None and not layout.named)


def _whose(probe: str | None) -> str:
    """The results of the probe ``probe`` in words (``None``: a ``run.json`` naming none)."""
    if probe is None:
        return ("results whose run.json names no probe (those of the probe that declares "
                "it reads them: ncprobe.probes.results_probe(None) names it)")
    return f"results of the {probe!r} probe"


def _read_with(probe: str | None) -> str:
    """How to read results of the probe ``probe`` (``None``: naming none)."""
    reader = (f"ncprobe.probes.results_class({probe!r}).load" if probe is not None
              else "ncprobe.probes.results_class(ncprobe.probes.results_probe(None)).load")
    return f"read it with its probe's results class ({reader}; ncprobe report / compare read it)"


def _probe_key(layout: Layout) -> dict:
    """``run.json``'s probe entry: none where ``layout.named`` is false (NCIMP's); and
    the version of its tables from 2 on (results of version 1 never recorded one)."""
    key = {"probe": layout.probe} if layout.named else {}
    return {**key, "version": layout.version} if layout.version > 1 else key


def _run_id(tables: dict[str, dict], runs: list[dict], layout: Layout) -> str:
    """The run id: a hash of the results format, the probe (when ``run.json`` names it), each
    table's rows and content digest, and the runs' metadata (as :func:`_stored_meta` gives
    it)."""
    text = json.dumps({"format": RESULTS_FORMAT, **_probe_key(layout), "tables": tables,
                       "runs": runs}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _stored_tables(stored: Mapping[str, Any], layout: Layout) -> tuple[str, ...]:
    """The tables ``run.json`` lists (``stored``): every table of ``layout`` but an optional
    one it does not list."""
    return tuple(n for n in layout.tables if n not in layout.optional or n in stored)


def _digests_ok(stored, tables: Iterable[str]) -> bool:
    """``run.json``'s ``tables``: for every table its rows, content digest and file SHA-256."""
    return isinstance(stored, dict) and all(
        isinstance(stored.get(n), dict) and isinstance(stored[n].get("rows"), int)
        and all(isinstance(stored[n].get(k), str) for k in ("content", "sha256"))
        for n in tables)


def _check_runs(runs: list, meta_file: Path, keys: Iterable[str] = ("model", "lang")) -> None:
    """Refuse a ``run.json`` whose runs lack what every reader of them needs: no run at all
    (nothing says what made the tables), or a run without its ``config`` and the ``keys``
    of it."""
    if not runs:
        raise DataError("its list of runs is empty: nothing says which model, options and "
                        "data made the tables (ncprobe writes one run per model); the file "
                        "was edited or damaged: recompute the results", file=str(meta_file))
    for i, m in enumerate(runs, start=1):
        where = f"run {i} of {len(runs)}"
        if not isinstance(m, dict):
            raise DataError(f"{where} is not an object of run metadata; the file is damaged "
                            "or was edited: recompute the results", file=str(meta_file))
        cfg = m.get("config")
        if not isinstance(cfg, dict):
            raise DataError(f"{where} has no 'config' (the options it was computed with); the "
                            "file is damaged or was edited: recompute the results",
                            file=str(meta_file))
        for key in keys:
            if not isinstance(cfg.get(key), str):
                raise DataError(f"{where}: 'config' has no {key!r}; the file is damaged or "
                                "was edited: recompute the results", file=str(meta_file))
        if not isinstance(m.get("notes", []), list):
            raise DataError(f"{where}: 'notes' is not a list; the file is damaged or was "
                            "edited: recompute the results", file=str(meta_file))


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.number, np.bool_)) and not isinstance(v, str)


def _check_table(name: str, df: pd.DataFrame, file: Path, layout: Layout) -> None:
    """Refuse a table without the columns ncprobe writes, or with text where it writes numbers
    (``layout.numeric``): every
    statistic drawn from it would fail or be wrong."""
    columns = layout.columns[name]
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"no column {', '.join(map(repr, missing))} (the {name} table has "
                        f"{', '.join(columns)}); the table is damaged or was "
                        "edited: recompute the results", file=str(file))
    for col in columns:
        if col not in layout.numeric:
            continue
        values = df[col]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        bad = values[values.notna() & ~values.map(_is_number).astype(bool)]
        if len(bad):  # e.g. text: an empty table's columns of no type are fine
            at = int(np.flatnonzero(values.index == bad.index[0])[0]) + 1
            kind = "text" if isinstance(bad.iloc[0], str) else type(bad.iloc[0]).__name__
            raise DataError(f"holds {kind} where ncprobe writes numbers ({bad.iloc[0]!r} in "
                            f"row {at}; {len(bad)} such rows); "
                            "the table is damaged or was edited: recompute the results",
                            file=str(file), column=col)


def run_identity(meta: list[dict] | dict, layout: Layout) -> list[dict]:
    """What makes runs the same: config (less :data:`NOT_IDENTITY`), model fingerprint, data,
    and the vector transform of a transformed run (:data:`ncprobe.transform.META_KEY`).

    Accepts a list of run metadata or one run's config dict (then only the config is
    compared). A field of the config class ``layout`` names (:attr:`Layout.config`) that a
    run's config leaves out reads as its default (NCIMP's ``run.json`` leaves some out at
    their default: :data:`ncprobe.ncimp.config.OMITTED_AT_DEFAULT`).
    """
    from dataclasses import MISSING

    defaults = ({f.name: f.default for f in fields(layout.config) if f.default is not MISSING}
                if layout.config is not None else {})
    runs = [{"config": meta}] if isinstance(meta, dict) else meta
    out = []
    for m in runs:
        cfg = {**defaults, **(m.get("config") or {})}
        ident = {"config": {k: v for k, v in cfg.items() if k not in NOT_IDENTITY},
                 "fingerprint": m.get("fingerprint"), "data_sources": m.get("data_sources")}
        if m.get(TRANSFORM_KEY) is not None:  # vectors transformed as read: another run
            ident[TRANSFORM_KEY] = m[TRANSFORM_KEY]
        # as written to run.json (tuples become lists), so that read and new compare equal
        out.append(json.loads(json.dumps(ident, sort_keys=True, default=str)))
    return out


def _differences(old: list[dict], new: list[dict]) -> str:
    if len(old) != len(new):
        return f"{len(old)} run(s) there, {len(new)} now"
    diffs = []
    for a, b in zip(old, new, strict=True):
        keys = sorted(set(a["config"]) | set(b["config"]))
        diffs += [f"{k} {a['config'].get(k)!r} there, {b['config'].get(k)!r} now" for k in keys
                  if a["config"].get(k) != b["config"].get(k)]
        for part, what in (("fingerprint", "the model (its fingerprint)"),
                           ("data_sources", "the data files")):
            if a[part] is not None and b[part] is not None and a[part] != b[part]:
                diffs.append(f"{what} differ")
        if a.get(TRANSFORM_KEY) != b.get(TRANSFORM_KEY):
            diffs.append(f"vector transform {a.get(TRANSFORM_KEY) or 'none'} there, "
                         f"{b.get(TRANSFORM_KEY) or 'none'} now")
    return "; ".join(dict.fromkeys(diffs))


def inspect_dir(path: str | Path) -> tuple[str, str, list[dict]]:
    """What is at ``path``, without following a link or changing anything.

    Returns:
        ``(kind, why, runs)``: kind ``missing``, ``empty``, ``results`` (an ncprobe
        results directory and nothing else; ``runs`` is its metadata) or ``foreign``
        (``why`` says what makes it so).
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing", "", []
    if stat.S_ISLNK(st.st_mode):
        return "foreign", "it is a symbolic link", []
    if not stat.S_ISDIR(st.st_mode):
        return "foreign", "it is a file, not a directory", []
    children = sorted(os.scandir(path), key=lambda c: c.name)
    if not children:
        return "empty", "", []
    listed = _listed_files(path / "run.json")
    allowed = listed.__contains__ if listed is not None else _is_result_file
    others = [c.name for c in children if not c.is_file(follow_symlinks=False)
              or not allowed(c.name)]
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        return "foreign", f"it holds {shown}, which ncprobe does not write there", []
    if not (path / "run.json").is_file():
        return "foreign", "it has no run.json", []
    try:
        meta = _read_run_json(path / "run.json")
    except DataError as e:
        return "foreign", str(e), []
    if not isinstance(meta.get("format"), int):
        return "foreign", "its run.json has no results format", []
    return "results", "", meta["runs"]


def _listed_files(meta_file: Path) -> set[str] | None:
    """The files the results directory of ``meta_file`` (its ``run.json``) holds as that
    ``run.json`` lists them: itself and its tables; ``None`` when it lists none (no readable
    ``run.json``, no ``tables``)."""
    if not meta_file.is_file():
        return None
    try:
        tables = _read_run_json(meta_file).get("tables")
    except DataError:
        return None
    if not isinstance(tables, dict):
        return None
    return {"run.json"} | {f"{t}.parquet" for t in tables}


def check_writable(path: str | Path) -> None:
    """Refuse, before any work, a results directory that :func:`write_results` could not
    write: a directory is created and removed where it would write (beside ``path``; in the
    nearest existing directory above it when its parent does not exist yet).

    Raises:
        OutputError: naming ``path`` and the cause (a read-only file system, no permission,
            a file where a directory is needed, a link loop).
    """
    from .._io import check_can_write, output_error

    try:
        target = Path(path).expanduser().resolve()
    except RuntimeError as e:  # Python < 3.13: a symbolic-link loop
        raise output_error(OSError(errno.ELOOP, str(e)), path,
                           what="results directory") from None
    check_can_write(target.parent, target=path, what="results directory")


def data_read(runs: Iterable[Mapping]) -> tuple[dict[str, str], set[str]]:
    """What the runs ``runs`` (a results' ``meta``) were computed from: every data file read,
    file -> git blob id (``run.json``'s ``data_sources``), and those of them that differed
    from their pin (``modified_data``). Results are shown or tested together only where
    these agree (:func:`ncprobe.ncimp.cells.check_same_data`, and the retrieval probe's
    ``check_same_items``)."""
    data: dict[str, str] = {}
    modified: set[str] = set()
    for m in runs:
        data.update({str(k): str(v) for k, v in (m.get("data_sources") or {}).items()})
        modified |= set(map(str, m.get("modified_data") or {}))
    return data, modified


def check_target(path: str | Path, meta: list[dict] | dict, *, layout: Layout,
                 overwrite: bool = False, option: str = "--out") -> None:
    """Refuse to write a run into ``path`` when that would replace something it must not.

    Args:
        path: the results directory about to be written.
        meta: the new results' ``meta`` (a list of runs), or a run's config dict, or runs
            with a ``config`` alone (a check before computing, on the configs alone).
        layout: the layout of the probe whose results are about to be written.
        overwrite: allow replacing a results directory of a different run.
        option: the command's option that chose ``path`` (``--results-dir`` for reproduce,
            whose run directories are named below it), named in the messages.

    Raises:
        UsageError: ``path`` is inside a results directory
            (:func:`~ncprobe.owned.enclosing_results`: it would change that one), is not an
            ncprobe results directory (never replaced), holds another probe's results
            (never replaced, even with ``overwrite``: the message names that probe), or
            holds a different run and ``overwrite`` is false.
    """
    above = enclosing_results(path)
    if above is not None:
        raise UsageError(f"{path} is inside the results directory {above} (it holds run.json): "
                         "results written there would change it (ncprobe would no longer "
                         "take it for a results directory, and would never replace it "
                         f"again); nothing was written: choose an {option} outside every "
                         "results directory")
    try:
        kind, why, runs = inspect_dir(path)
    except NotADirectoryError:  # a file where a folder of the path is needed: exit 6,
        check_writable(path)  # naming it, by the one writability check
        raise
    if kind in ("missing", "empty"):
        return
    if kind == "foreign":
        raise UsageError(f"{path} is not an ncprobe results directory ({why}); ncprobe never "
                         f"replaces it, even with --overwrite: choose another {option}")
    refuse_other_probe(path, runs, layout, option)
    new = run_identity(meta, layout)
    old = run_identity(runs, layout)
    if isinstance(meta, dict) or all(m.get("fingerprint") is None for m in meta):
        # a check before computing, on the configs alone: compare configs
        old = [{**o, "fingerprint": None, "data_sources": None} for o in old]
        new = [{**n, "fingerprint": None, "data_sources": None} for n in new]
    if old == new or overwrite:
        return
    described = ", ".join("/".join(str(r["config"][k]) for k in layout.run_keys
                                   if r["config"].get(k) is not None) for r in runs)
    raise UsageError(f"{path} holds another run ({described}; {_differences(old, new)}); "
                     f"pass --overwrite (Python: overwrite=True) to replace it, or choose another "
                     f"{option}")


def refuse_other_probe(path: str | Path, runs: list[dict], layout: Layout, option: str
                       ) -> None:
    """Refuse to write results of ``layout``'s probe into the results directory ``path``
    (whose runs are ``runs``) when it holds another probe's: never replaced, whatever
    ``--overwrite`` says (``option`` chose ``path``).

    Raises:
        UsageError: naming the probe whose results are there and its models.
    """
    there = probe_of(path)
    if _holds(layout, there):
        return
    models = ", ".join(dict.fromkeys(str((r.get("config") or {}).get("model", "?"))
                                     for r in runs)) or "no model"
    raise UsageError(f"{path} holds {_whose(there)} (model(s) {models}), not of the "
                     f"{layout.probe!r} probe: ncprobe never writes one probe's results over "
                     f"another's, even with --overwrite; nothing was written: choose another "
                     f"{option}")


def model_runs(config: Any, out: str | Path | None = None, *, layout: Layout,
               overwrite: bool = False, transform: str | None = None,
               omitted_at_default: Sequence[str] = ()) -> dict[str, dict]:
    """What ``run.json`` records of each model's run of a probe's ``config`` (a config
    dataclass with a ``models`` field, one run per model; ``layout``: the probe's), by model:
    the model and every other option (a tuple as a list). With ``out``, the results directory
    the runs go to is
    refused before any work where it must not be written (:func:`check_target`,
    :func:`check_writable`); ``transform``: the fingerprint of the vector transform the runs
    will record (:mod:`ncprobe.transform`), compared as well; ``omitted_at_default``: fields
    added after results existed, left out where they hold their default, so that a run that
    does not use them keeps the ``run.json`` and run id it had (a missing field reads as its
    default in :func:`run_identity`).

    Raises:
        UsageError, OutputError: as :func:`check_target` and :func:`check_writable`.
    """
    from dataclasses import asdict, fields

    defaults = {f.name: f.default for f in fields(config)}

    def run(model: str) -> dict:
        options = {k: (list(v) if isinstance(v, tuple) else v)
                   for k, v in asdict(config).items() if k != "models"
                   and not (k in omitted_at_default and v == defaults[k])}
        return {"model": model, **options}

    runs = {m: run(m) for m in config.models}
    if out is not None:
        extra = {} if transform is None else {TRANSFORM_KEY: transform}
        check_target(out, [{"config": r, **extra} for r in runs.values()], layout=layout,
                     overwrite=overwrite)
        check_writable(out)
    return runs


def tidy_leftovers(parent: Path, name: str) -> None:
    """Tidy what killed :func:`write_results` writes of ``parent/name`` left beside it.

    Called with ``parent`` locked (:func:`~ncprobe._io.dir_lock`), so that no other writer is
    between the two renames of its swap. Only directories named as ``to_parquet`` names them
    and holding nothing but results files (or nothing) are touched; anything else is left
    and named in a warning.

    * ``.<name>.<8 chars>.tmp``: a temporary directory (:func:`ncprobe.owned.locked_temp_dir`).
      A writer holds its lock from right after creating it until it is renamed into place,
      so an unlocked one is a killed write's, and is removed, empty or partly written
      (:func:`ncprobe.owned.remove_temp_dirs`).
    * ``.<name>.old-<12 hex>``: a previous run moved aside (:func:`ncprobe.owned.aside_name`).
      Beside an existing ``name`` the swap happened and the removal was cut short: removed,
      whole or partly removed. With no ``name``, the write was killed between its two renames
      and this is the previous run: put back as ``name`` (when it is whole and alone), so
      that it is replaced only as any results directory is (the same run, or ``overwrite``).
    """
    if os.name == "nt":  # no directory locks there (see dir_lock): never guess
        return
    remove_temp_dirs(parent, name, _is_result_file, logger=log)
    pattern = aside_re(name)
    olds = sorted(Path(e.path) for e in os.scandir(parent)
                  if pattern.match(e.name) and e.is_dir(follow_symlinks=False))
    target = parent / name
    if olds and not os.path.lexists(target):
        whole = [p for p in olds if inspect_dir(p)[0] == "results"]
        if len(whole) != 1:
            log.warning("%s is missing and %s hold(s) earlier runs moved aside by killed "
                        "writes; left in place: rename the one to keep to %s", target,
                        ", ".join(p.name for p in olds), name)
            return
        os.rename(whole[0], target)
        olds.remove(whole[0])
        log.warning("%s: put back the previous run from %s, left by a write killed "
                    "between its two renames", target, whole[0].name)
    for old in olds:
        with contextlib.suppress(FileNotFoundError):  # removed by its writer meanwhile
            remove_if_only(old, _is_result_file, logger=log)


def _remove_results_dir(path: Path) -> None:
    """Delete a results directory moved aside, file by file, if it is nothing but that."""
    kind, why, _ = inspect_dir(path)
    if kind not in ("results", "empty"):
        log.warning("left %s in place: %s", path, why)
        return
    for child in os.scandir(path):
        os.unlink(child.path)
    os.rmdir(path)


def find_results(paths) -> list[Path]:
    """Results directories named by ``paths``: each one itself, or every one found below it.

    A path holding ``run.json`` is taken as it is; any other directory is searched
    (recursively, without following links or entering hidden directories such as
    ncprobe's temporary ones) for directories holding ``run.json``, in sorted order.

    Raises:
        UsageError: a path does not exist, or is a directory with no results in or below it.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if (p / "run.json").is_file():
            out.append(p)
            continue
        if not p.is_dir():
            raise UsageError(f"{p}: no such directory; give results directories written by "
                             "`ncprobe compute` or `ncprobe reproduce`, or a directory above them")
        found = []
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            if "run.json" in filenames:
                found.append(Path(dirpath))
        if not found:
            raise UsageError(f"{p} holds no results directory (no run.json in it or below it); "
                             "give directories written by `ncprobe compute --out DIR` or "
                             "`ncprobe reproduce --results-dir DIR`")
        log.info("%s: %d results directories found", p, len(found))
        out += sorted(found)
    seen: set[Path] = set()
    unique = []
    for d in out:
        resolved = d.resolve()
        if resolved not in seen:
            seen.add(resolved)
            unique.append(d)
    return unique


def drop_excluded(found: list[Path], exclude: Iterable[str | os.PathLike], *,
                  require_match: bool = True) -> list[Path]:
    """``found`` less the directories at or below a path of ``exclude``.

    Raises:
        UsageError: an ``exclude`` path that does not exist, or (``require_match``) that
            leaves out no directory of ``found``; nothing left.
    """
    excluded = [Path(e).expanduser() for e in exclude]
    if not excluded:
        return list(found)
    missing = [str(e) for e in excluded if not os.path.lexists(e)]
    if missing:
        raise UsageError(f"--exclude {', '.join(missing)}: no such file or directory")
    gone = [e.resolve() for e in excluded]
    used: set[int] = set()
    keep = []
    for d in found:
        r = d.resolve()
        hit = {k for k, e in enumerate(gone) if r == e or e in r.parents}
        used |= hit
        if not hit:
            keep.append(d)
    unused = [str(e) for k, e in enumerate(excluded) if k not in used]
    if unused and require_match:
        shown = ", ".join(map(str, found[:10])) + (f" ... ({len(found)} in all)"
                                                    if len(found) > 10 else "")
        raise UsageError(f"--exclude {', '.join(unused)}: no results directory found is there "
                         f"or below it (found: {shown})")
    if not keep:
        raise UsageError("--exclude leaves out every results directory found: nothing to read")
    return keep
