"""The report end to end on Results made by the pipeline (analyse) for 2 models x 2 languages.

The figure and table functions are tested cell by cell in test_plots.py and test_tables.py on
hand-built tables; here the tables come from `analyse`, as in a real run.
"""

from __future__ import annotations

import itertools

import matplotlib
import numpy as np
import pytest

import ncprobe
from ncprobe.embed import Embeddings
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp import tables
from ncprobe.ncimp.analysis import analyse
from ncprobe.ncimp.config import RunConfig
from ncprobe.ncimp.report import write_report

N_NC = 12
CLASS_OF = ["I", "PC", "C"]


def _pairs_file(path, lang):
    lines = ["nc,sentence,start,end,probe,substitute,comp,class,context"]
    for i in range(N_NC):
        nc = f"w{i} x{i}" if i else "grey matter"  # one example NC of the study
        for ctx in ("S1", "S2", "S3", "N"):
            sent = f"one {nc} is here {ctx.lower()}" if ctx != "N" else f"this is a {nc}"
            start = 1 if ctx != "N" else 3
            subs = [("syn", f"s{i}"), ("comp-head", nc.split()[1]), ("comp-mod", nc.split()[0]),
                    ("wordssyn", f"a{i} b{i}"), ("rand", f"r{i} q"), ("rand", f"t{i} u")]
            for probe, sub in subs:
                lines.append(f"{nc},{sent},{start},{start + 2},{probe},{sub},{i * 0.4:.1f},"
                             f"{CLASS_OF[i % 3]},{ctx}")
    path.write_text("\n".join(lines) + "\n")
    return ncprobe.load_pairs(path, lang=lang)


def _run(tmp_path, model, lang, seed):
    stim = _pairs_file(tmp_path / f"{model}-{lang}.csv", lang)
    rng = np.random.default_rng(seed)
    n = len(stim)
    # NC-level vectors share a component that grows with the NC's index, so NC-level
    # similarities follow the gold score; sentence vectors are noise
    base = rng.normal(size=(n, 1, 8)).astype(np.float32)
    trend = np.array([[int(s.nc.split()[0][1:]) if s.nc != "grey matter" else 0]
                      for s in stim], dtype=np.float32)[:, :, None]
    sent = base
    span = base[:, :, ::-1].copy() + 0.2 * trend
    emb = Embeddings(sent, span, np.zeros(n, np.int32), np.zeros(n, np.int32), n, n)
    cfg = RunConfig(model=model, lang=lang, n_boot=20)
    return analyse(stim, emb, cfg, model=model, view_names=["-"], levels=("sent", "nc"),
                   meta={"config": cfg.to_dict()})


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("synthetic")
    return ncprobe.Results.concat([_run(tmp, m, lg, seed) for seed, (m, lg) in enumerate(
        itertools.product(["model-a", "model-b"], ["en", "pt"]))])


def test_means_table_and_examples(results):
    t = tables.means(results)
    d = results.distributions
    row = d[(d["model"] == "model-b") & (d["lang"] == "pt") & (d["level"] == "sent")
            & (d["context"] == "neut") & (d["cls"] == "all") & (d["measure"] == "syn")
            & (d["space"] == "raw")].iloc[0]
    assert t.loc[("model-b", "Sent", "PT-Neut"), "P_Syn"] == f"{row['mean']:.3f} ± {row['sd']:.3f}"
    ex = tables.examples(results)
    assert set(ex.index.get_level_values("nc")) == {"grey matter"}
    assert ex.attrs["missing"] == ["eager beaver", "Dutch courage", "eternal rest",
                                   "economic aid", "research lab"]
    mine = tables.examples(results, ["W3 X3"])  # case-insensitive
    assert set(mine.index.get_level_values("nc")) == {"w3 x3"} and not mine.attrs["missing"]


#: A matplotlib setting the figures' own style leaves alone (it sets fonts, sizes and
#: colours): the margin of the saved files. Both reports below are written with it, so that
#: figure workers (fresh processes) that drew with the defaults would write other files.
CALLERS_SETTINGS = {"savefig.pad_inches": 0.5}


@pytest.fixture(scope="module")
def inline_report(results, tmp_path_factory):
    """Every figure and table written in this process (``jobs=1``) while the caller's backend
    is Jupyter's inline one, which shows every figure pyplot knows of after a cell, and the
    caller's :data:`CALLERS_SETTINGS` are in force: the files written, and the caller's
    matplotlib state around the call. One report for the tests of the files, of the figure
    workers and of the caller's state, drawn once."""
    import matplotlib.pyplot as plt

    out = tmp_path_factory.mktemp("inline") / "one"
    previous = matplotlib.get_backend()
    matplotlib.use("module://matplotlib_inline.backend_inline")
    try:
        state = {"inline": matplotlib.get_backend()}
        fig = plots.FIGURES["ratio"](results)  # the caller's own figure, made before
        with matplotlib.rc_context(CALLERS_SETTINGS):
            written = write_report(results, out, formats=("png", "pdf"), dpi=60, jobs=1)
        state.update(backend=matplotlib.get_backend(), fignums=plt.get_fignums(),
                     caller_axes=bool(fig.axes))
    finally:
        plt.close("all")
        matplotlib.use(previous)
    state["restored"] = matplotlib.get_backend() == previous
    return written, state


@pytest.fixture(scope="module")
def worker_report(results, tmp_path_factory):
    """The report of :func:`inline_report` with a figure worker (``jobs=2``: a fresh process
    draws figures from the front of the list while this one draws from the back), the same
    :data:`CALLERS_SETTINGS` in force: the files written. Drawn once for the tests of the
    files and of the workers' settings."""
    out = tmp_path_factory.mktemp("workers") / "two"
    with matplotlib.rc_context(CALLERS_SETTINGS):
        return write_report(results, out, formats=("png", "pdf"), dpi=60, jobs=2)


@pytest.mark.slow
def test_write_report_writes_every_figure_and_table_whatever_the_workers(inline_report,
                                                                         worker_report):
    one, _ = inline_report
    names = sorted(p.name for p in one)
    for ext in ("png", "pdf"):
        assert [n for n in names if n.startswith("fig") and n.endswith(ext)] == sorted(
            f"fig{i:02d}_{name}.{ext}" for i, name in enumerate(plots.FIGURES, start=1))
    assert {f"table_{t}.md" for t in tables.TABLES} <= set(names)
    assert {f"table_{t}.tex" for t in tables.TABLES} <= set(names)
    index = (one[0].parent / "README.md").read_text()
    assert "model-a (en)" in index and "model-b (pt)" in index
    _assert_written_for_readers(index)
    # figure workers (fresh processes) write the same files, byte for byte
    two = worker_report
    assert [p.name for p in one] == [p.name for p in two]
    for a, b in zip(one, two, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


@pytest.mark.slow
def test_figure_workers_take_the_callers_matplotlib_settings(results, inline_report,
                                                             worker_report):
    # a worker is a fresh process: without the caller's settings it would draw with the
    # defaults; the figures' own style sets fonts, sizes and colours, so the caller changed
    # the margin (CALLERS_SETTINGS) around both reports. The first two figures, which the
    # worker takes first: drawn by it as by this process, and otherwise with the defaults
    from ncprobe.ncimp.report import _render, _view

    view = _view(results, None, None)
    options = {s.name: s.options(view) for s in plots.FIGURE_SPECS}
    one, _ = inline_report
    names = list(plots.FIGURES)[:2]
    alone = {p.name: p.read_bytes() for p in one}
    par = {p.name: p.read_bytes() for p in worker_report}
    files = {n: f"fig{i:02d}_{n}.png" for i, n in enumerate(names, start=1)}
    default = {n: _render(n, results, ("png",), 60, options=options[n]) for n in names}
    for name in names:
        assert par[files[name]] == alone[files[name]]
    assert any(default[n][0]["png"] != alone[files[n]] for n in names)  # settings matter


@pytest.mark.slow
def test_the_callers_backend_and_pyplot_are_left_alone(inline_report):
    # as in Jupyter: the inline backend, which shows every figure pyplot knows of after a cell
    # (the report of inline_report, written under it)
    written, state = inline_report
    assert state["inline"] == "module://matplotlib_inline.backend_inline"
    assert state["backend"] == state["inline"]
    assert state["fignums"] == []
    assert state["caller_axes"] and any(p.name == "fig08_ratio.png" for p in written)
    assert state["restored"]


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True, "2"])
def test_jobs_must_be_a_whole_number_of_processes(results, tmp_path, jobs):
    from ncprobe.errors import UsageError

    with pytest.raises(UsageError, match="jobs="):
        write_report(results, tmp_path / "out", jobs=jobs)
    assert not (tmp_path / "out").exists()


def _code_names() -> set[str]:
    """The names of ncprobe's functions and classes that figure and table code defines."""
    import inspect

    from ncprobe import stats
    from ncprobe.ncimp import inference, report, selection

    names: set[str] = set()
    for module in (plots, tables, inference, report, selection, stats):
        names |= {n for n, obj in vars(module).items()
                  if (inspect.isfunction(obj) or inspect.isclass(obj)) and "_" in n.strip("_")}
    return names


def _assert_written_for_readers(index: str) -> None:
    """Issue 28: no function names, reST roles or double backticks in the report's index."""
    import re

    assert "``" not in index and not re.search(r":\w+:`", index)
    # outside the file names in backticks, no word is the name of a function of ncprobe's
    prose = re.sub(r"`[^`]*`", "", index)
    words = set(re.findall(r"\b[A-Za-z]\w*_\w+\b", prose))
    assert not words & _code_names(), words & _code_names()
