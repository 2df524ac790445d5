"""The notebook API: Results.select / Results.wide, Stimuli.filter's checks, compute's options.

Results are made by the pipeline itself (``analyse``) from a small pairs file and seeded
random vectors; every expected value is taken from the tidy tables with plain pandas or
plain Python, never through select or wide.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing

import numpy as np
import pandas as pd
import pytest

import ncprobe
from ncprobe.encoders import load_encoder
from ncprobe.ncimp.config import OMITTED_AT_DEFAULT, RunConfig

from ..synthetic import analysed_random, pairs_stimuli

N_NC = 9
CLASSES = ["I", "PC", "C"]
KEYS = ["model", "lang", "space", "layers", "level", "context", "nc"]
# the measures in the order the package documents them (docs/method.md, the measures)
MEASURE_ORDER = ["syn", "comp-head", "comp-mod", "comp", "wordssyn", "rand", "A_Syn|WordsSyn",
                 "A_Syn|Rand", "Sim_R|Syn", "Sim_R|WordsSyn", "Sim_R|Syn/Sim_R|WordsSyn"]


@pytest.fixture(scope="module")
def stim(tmp_path_factory):
    return pairs_stimuli(tmp_path_factory.mktemp("pairs") / "pairs.csv", n_nc=N_NC,
                         classes=CLASSES)


@pytest.fixture(scope="module")
def results(stim):
    return ncprobe.Results.concat([analysed_random(stim, "m-a", 0),
                                   analysed_random(stim, "m-b", 1)])


# --- Results.select ------------------------------------------------------------------------

def test_select_defaults_to_the_per_nc_measures(results) -> None:
    m = results.measures
    want = m[(m["level"] == "nc") & (m["context"] == "nat")
             & m["measure"].isin(["syn", "comp"])].reset_index(drop=True)
    got = results.select(level="nc", context="nat", measure=["syn", "comp"])
    pd.testing.assert_frame_equal(got, want)
    # 2 models x 2 layer views x 2 spaces x 9 NCs x 2 measures
    assert len(got) == 2 * 2 * 2 * N_NC * 2
    # one value, or a list of one value: the same
    pd.testing.assert_frame_equal(results.select(model="m-b"), results.select(model=["m-b"]))
    assert set(results.select(model="m-b")["model"]) == {"m-b"}
    # no filter: the whole table
    pd.testing.assert_frame_equal(results.select(), m.reset_index(drop=True))


def test_select_analysis_means_the_correlations(results) -> None:
    c = results.correlations
    want = c[(c["analysis"] == "overlap-filtered") & (c["space"] == "raw")
             & (c["level"] == "sent")].reset_index(drop=True)
    got = results.select(analysis="overlap-filtered", space="raw", level="sent")
    pd.testing.assert_frame_equal(got, want)
    assert len(got) == 2 * 2 * 2 * len(MEASURE_ORDER)  # models x views x contexts x measures
    both = results.select("correlations", analysis=["nc", "overlap-filtered"])
    assert len(both) == len(c)  # no per-sentence analysis in these runs


def test_select_other_tables_and_layers_as_numbers(results) -> None:
    s = results.sentences
    want = s[s["context"].isin(["S1", "N"]) & (s["nc"] == "w3 x3")].reset_index(drop=True)
    pd.testing.assert_frame_equal(results.select("sentences", context=["S1", "N"], nc="w3 x3"),
                                  want)
    d = results.distributions
    want = d[(d["cls"] == "PC") & (d["model"] == "m-a")].reset_index(drop=True)
    pd.testing.assert_frame_equal(results.select("distributions", cls="PC", model="m-a"), want)
    m = results.measures
    pd.testing.assert_frame_equal(results.select(layers=12),
                                  m[m["layers"] == "12"].reset_index(drop=True))
    cos = results.cosines
    pd.testing.assert_frame_equal(results.select("cosines", probe="rand", level="sent"),
                                  cos[(cos["probe"] == "rand") & (cos["level"] == "sent")
                                      ].reset_index(drop=True))


@pytest.mark.parametrize("kwargs, names", [
    ({"context": "neut-pl"}, ["nat", "neut"]),            # a group these runs do not have
    ({"context": ["nat", "S1"]}, ["nat", "neut"]),        # a sentence context in a per-NC table
    ({"table": "sentences", "context": "nat"}, ["S1", "S2", "S3", "N"]),
    ({"model": "glove"}, ["m-a", "m-b"]),
    ({"level": "word"}, ["sent", "nc"]),
    ({"space": "std"}, ["raw", "standardised"]),
    ({"analysis": "ncs"}, ["nc", "overlap-filtered"]),
    ({"nc": "w9 x9"}, ["w0 x0", "w8 x8"]),
    ({"table": "distributions", "cls": "IC"}, ["all", "I", "PC", "C"]),
])
def test_select_refuses_values_not_in_the_table(results, kwargs, names) -> None:
    with pytest.raises(ValueError) as e:
        results.select(**kwargs)
    msg = str(e.value)
    bad = next(v for k, v in kwargs.items() if k != "table")
    bad = bad[-1] if isinstance(bad, list) else bad
    assert repr(bad) in msg
    for name in names:
        assert name in msg


def test_select_refuses_columns_and_tables_that_do_not_exist(results) -> None:
    with pytest.raises(ValueError, match="level"):
        results.select("lexical_overlap", level="nc")
    with pytest.raises(ValueError, match="analysis"):
        results.select("measures", analysis="nc")
    with pytest.raises(ValueError, match="correlations"):
        results.select("correlation")


# --- Results.wide ------------------------------------------------------------------------------

def test_wide_is_one_row_per_nc_and_one_column_per_measure(results) -> None:
    w = results.wide(space="raw")
    long = results.measures[results.measures["space"] == "raw"]
    records = long.to_dict("records")
    cells = {(tuple(r[k] for k in KEYS), str(r["measure"])): r["value"] for r in records}
    info = {tuple(r[k] for k in KEYS): (r["cls"], r["gold"]) for r in records}
    present = {str(r["measure"]) for r in records}
    assert list(w.columns) == KEYS + ["cls", "gold"] + [m for m in MEASURE_ORDER if m in present]
    assert len(w) == len(info) == 2 * 2 * 2 * 2 * N_NC  # models, views, levels, contexts, NCs
    assert not w.duplicated(KEYS).any()
    assert list(map(tuple, w[KEYS].to_numpy())) == sorted(info)
    for row in w.to_dict("records"):
        key = tuple(row[k] for k in KEYS)
        assert (row["cls"], row["gold"]) == info[key]
        for measure in present:
            want = cells.get((key, measure), math.nan)
            assert row[measure] == want or (math.isnan(row[measure]) and math.isnan(want))


def test_wide_filters_as_select(results) -> None:
    w = results.wide(model="m-a", level="nc", context="neut", measure=["rand", "syn"],
                     nc="w4 x4")
    m = results.measures
    sub = m[(m["model"] == "m-a") & (m["level"] == "nc") & (m["context"] == "neut")
            & (m["nc"] == "w4 x4")]
    assert list(w.columns) == KEYS + ["cls", "gold", "syn", "rand"]
    assert sorted(zip(w["layers"], w["space"], strict=True)) == [
        ("12", "raw"), ("12", "standardised"), ("6", "raw"), ("6", "standardised")]
    for row in w.to_dict("records"):
        at = sub[(sub["layers"] == row["layers"]) & (sub["space"] == row["space"])]
        for measure in ("syn", "rand"):
            assert row[measure] == at.loc[at["measure"] == measure, "value"].item()
    with pytest.raises(ValueError, match="nat"):
        results.wide(context="S1")


# --- Stimuli.filter ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, names", [
    ({"context": "neut"}, ["S1", "S2", "S3", "N", "Npl"]),
    ({"context": ["S1", "nat"]}, ["S1", "S2", "S3", "N", "Npl"]),
    ({"probe": "comp"}, ["original", "syn", "comp-head", "comp-mod", "wordssyn", "rand"]),
    ({"nc": "w1 y1"}, ["w0 x0", "w1 x1", "w8 x8"]),
    ({"lang": "english"}, ["en", "pt"]),
])
def test_stimuli_filter_refuses_unknown_values(stim, kwargs, names) -> None:
    with pytest.raises(ValueError) as e:
        stim.filter(**kwargs)
    msg = str(e.value)
    value = next(iter(kwargs.values()))
    assert repr(value[-1] if isinstance(value, list) else value) in msg
    for name in names:
        assert name in msg


def test_stimuli_filter_still_selects(stim) -> None:
    got = stim.filter(context=["S1", "N"], probe="syn")
    assert [s.context for s in got] == [s.context for s in stim
                                        if s.context in ("S1", "N") and s.probe == "syn"]
    assert len(got) == N_NC * 2
    assert len(stim.filter(context="Npl")) == 0  # a context id these pairs lack: nothing


# --- compute's options -----------------------------------------------------------------------

def _literals(hint) -> set:
    if typing.get_origin(hint) is typing.Literal:
        return set(typing.get_args(hint))
    return set().union(*(_literals(a) for a in typing.get_args(hint))) if typing.get_args(
        hint) else set()


def test_compute_takes_every_runconfig_field_as_a_keyword() -> None:
    names = [f.name for f in dataclasses.fields(RunConfig)]
    # the signature help() and IPython show: compute's **options are RunConfig's fields
    params = inspect.signature(ncprobe.compute).parameters
    assert [p for p in params if p in names] == names
    for f in dataclasses.fields(RunConfig):
        assert params[f.name].kind is inspect.Parameter.KEYWORD_ONLY, f.name
        assert params[f.name].default == f.default, f.name  # RunConfig's own default
    assert "options" not in params and not any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    choices = {"lang": {"en", "pt"}, "gold": {"comp", "type"}, "wordssyn": {"first", "all"},
               "en_naturalistic": {"auto", "official", "reference"}, "levels": {"sent", "nc"}}
    config_hints = typing.get_type_hints(RunConfig)
    for name, values in choices.items():
        assert _literals(params[name].annotation) == values, name
        assert _literals(config_hints[name]) == values, name


def test_compute_refuses_unknown_keywords_and_config_with_options() -> None:
    with pytest.raises(TypeError, match="n_bot"):
        ncprobe.compute(n_bot=10)
    with pytest.raises(TypeError, match=r"not both \(got seed"):
        ncprobe.compute(RunConfig(), seed=3)


def test_compute_keywords_reach_the_run(stim, tmp_path) -> None:
    words = sorted({w for s in stim for w in s.tokens})
    rng = np.random.default_rng(5)
    vec = tmp_path / "vec.txt"
    vec.write_text(f"{len(words)} 6\n" + "\n".join(
        w + " " + " ".join(f"{x:.4f}" for x in rng.normal(size=6)) for w in words) + "\n",
        encoding="utf-8")
    res = ncprobe.compute(stimuli=stim, encoder=load_encoder(str(vec)), cache=False,
                          progress=False, n_boot=0, seed=7, top_k=2, per_sentence=True)
    config = res.meta[0]["config"]
    given = {"model": f"{tmp_path.name}/vec.txt", "n_boot": 0, "seed": 7, "top_k": 2,
             "per_sentence": True}
    for f in dataclasses.fields(RunConfig):
        want = given.get(f.name, f.default)
        if f.name in OMITTED_AT_DEFAULT:  # recorded only when not the default
            assert f.name not in config, f.name
            continue
        assert config[f.name] == want, f.name
    assert res.rogue["rank"].max() == 2
    assert "sentence" in set(res.correlations["analysis"])
