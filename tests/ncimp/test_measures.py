"""Measures (SPEC §3) and rogue dimensions: hand-worked examples, numpy twins, properties."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ncprobe.ncimp.measures import (
    RATIO,
    affinity,
    cosine,
    nc_measures,
    ratio,
    scaled_similarity,
    sentence_measures,
    undefined_counts,
)
from ncprobe.ncimp.rogue import (
    dimension_contributions,
    fit_standardiser,
    standardise,
    top_dimensions,
)

unit = st.floats(-1, 1, allow_nan=False)


def _cosines(rows):
    """A cosine table from (context, probe, variant, cosine) rows of one NC."""
    df = pd.DataFrame(rows, columns=["context", "probe", "variant", "cosine"])
    return df.assign(model="m", lang="en", space="raw", layers="-", level="nc", nc="a b")


HAND = _cosines([
    ("S1", "syn", 1, 0.9), ("S1", "comp-head", 1, 0.5), ("S1", "comp-mod", 1, 0.7),
    ("S1", "wordssyn", 1, 0.6), ("S1", "rand", 1, 0.2), ("S1", "rand", 2, 0.4),
    ("S2", "syn", 1, 0.5), ("S2", "comp-head", 1, 0.8), ("S2", "comp-mod", 1, 0.1),
    ("S2", "wordssyn", 1, 0.5), ("S2", "rand", 1, 0.5), ("S2", "rand", 2, 0.5),
    ("N", "syn", 1, 0.8), ("N", "comp-head", 1, 0.6), ("N", "comp-mod", 1, 0.6),
    ("N", "wordssyn", 1, 0.4), ("N", "rand", 1, 0.0), ("N", "rand", 2, 0.2),
])


def _value(df, context, measure):
    row = df[(df["context"] == context) & (df["measure"] == measure)]
    assert len(row) == 1, (context, measure)
    return float(row["value"].iloc[0])


def test_sentence_measures_hand_worked():
    s = sentence_measures(HAND)
    # S1: Sim(rand) = (0.2 + 0.4) / 2 = 0.3 (mean of cosines); comp = max(0.5, 0.7)
    assert _value(s, "S1", "rand") == pytest.approx(0.3)
    assert _value(s, "S1", "comp") == pytest.approx(0.7)
    assert _value(s, "S1", "A_Syn|WordsSyn") == pytest.approx(0.3)
    assert _value(s, "S1", "A_Syn|Rand") == pytest.approx(0.6)
    assert _value(s, "S1", "Sim_R|Syn") == pytest.approx(0.6 / 0.7)
    assert _value(s, "S1", "Sim_R|WordsSyn") == pytest.approx(0.3 / 0.7)
    assert _value(s, "S2", "comp") == pytest.approx(0.8)
    assert _value(s, "S2", "Sim_R|Syn") == pytest.approx(0.0)


def test_nc_measures_hand_worked():
    n = nc_measures(sentence_measures(HAND))
    assert set(n["context"]) == {"nat", "neut"}
    assert _value(n, "nat", "syn") == pytest.approx(0.7)
    # the study's P_Comp: per-sentence maximum, then the mean (not the max of the means, 0.65)
    assert _value(n, "nat", "comp") == pytest.approx(0.75)
    # Sim_R is the mean of the per-sentence ratios: (6/7 + 0) / 2
    assert _value(n, "nat", "Sim_R|Syn") == pytest.approx(3 / 7)
    assert _value(n, "nat", "Sim_R|WordsSyn") == pytest.approx(1.5 / 7)
    assert _value(n, "nat", RATIO) == pytest.approx(2.0)
    # neutral: its one sentence; Sim(rand) = 0.1
    assert _value(n, "neut", "Sim_R|Syn") == pytest.approx(0.7 / 0.9)
    assert _value(n, "neut", RATIO) == pytest.approx(0.7 / 0.3)


def test_rand_similarity_of_one_is_undefined_and_counted():
    rows = HAND.copy()
    rows.loc[(rows["context"] == "S2") & (rows["probe"] == "rand"), "cosine"] = 1.0
    s = sentence_measures(rows)
    assert math.isnan(_value(s, "S2", "Sim_R|Syn"))
    assert np.isfinite(s["value"].dropna()).all()
    n = nc_measures(s)
    assert _value(n, "nat", "Sim_R|Syn") == pytest.approx(0.6 / 0.7)  # S1 only
    notes = undefined_counts(rows, s, n)
    assert any("Sim_R|Syn undefined for 1 of 3 sentences" in line for line in notes)


def test_undefined_cosines_are_left_out_and_counted():
    rows = HAND.copy()
    rows.loc[(rows["context"] == "S1") & (rows["probe"] == "rand") & (rows["variant"] == 2),
             "cosine"] = np.nan
    s = sentence_measures(rows)
    assert _value(s, "S1", "rand") == pytest.approx(0.2)
    notes = undefined_counts(rows, s, nc_measures(s))
    assert notes and notes[0].startswith("1 of 18 cosines undefined")


def test_cosine_matches_numpy_and_handles_zero_and_nan():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(50, 7)), rng.normal(size=(50, 7))
    want = [x @ y / np.sqrt((x @ x) * (y @ y)) for x, y in zip(a, b, strict=True)]
    np.testing.assert_allclose(cosine(a, b), want, rtol=1e-12)
    a[0] = 0.0
    a[1, 3] = np.nan
    got = cosine(a, b)
    assert math.isnan(got[0]) and math.isnan(got[1])


@settings(max_examples=100, deadline=None)
@given(unit, st.lists(unit, min_size=1, max_size=5), st.lists(unit, min_size=1, max_size=5))
def test_affinity_is_the_difference_of_the_hand_computed_sims(syn, rand, wordssyn):
    """Eq. 4 through sentence_measures: Aff(P_i, P_j) = Sim(P_i) - Sim(P_j), each Sim the mean
    cosine of its variants, in that order (a swapped, max- or first-variant version fails)."""
    rows = ([("N", "syn", 1, syn)] + [("N", "rand", i, c) for i, c in enumerate(rand, 1)]
            + [("N", "wordssyn", i, c) for i, c in enumerate(wordssyn, 1)])
    s = sentence_measures(_cosines(rows))
    sim_rand = math.fsum(rand) / len(rand)
    sim_wordssyn = math.fsum(wordssyn) / len(wordssyn)
    assert _value(s, "N", "A_Syn|Rand") == pytest.approx(syn - sim_rand, abs=1e-12)
    assert _value(s, "N", "A_Syn|WordsSyn") == pytest.approx(syn - sim_wordssyn, abs=1e-12)
    np.testing.assert_allclose(affinity([syn, sim_rand], [sim_rand, syn]),
                               [syn - sim_rand, sim_rand - syn], atol=0)


@settings(max_examples=100, deadline=None)
@given(st.floats(-1, 0.999, allow_nan=False), unit)
def test_scaled_similarity_fixed_points(rand, sim):
    assert scaled_similarity(1.0, rand) == pytest.approx(1.0)
    assert scaled_similarity(rand, rand) == pytest.approx(0.0, abs=1e-12)
    value = scaled_similarity(sim, rand)
    assert (value > 0) == (sim > rand) or value == pytest.approx(0.0, abs=1e-12)


def test_ratio_with_zero_denominator_is_nan():
    got = ratio([1.0, 1.0, 0.0], [2.0, 0.0, 1e-9])
    assert got[0] == 0.5 and math.isnan(got[1]) and math.isnan(got[2])


def test_dimension_contributions_sum_to_the_brute_force_mean_cosine():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 6)) + np.array([5.0, 0, 0, 0, 0, 0])  # dimension 0 is rogue
    pairs = [cosine(x[i], x[j]) for i, j in itertools.permutations(range(30), 2)]
    c = dimension_contributions(x)
    assert c.sum() == pytest.approx(np.mean(pairs), rel=1e-12)
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    brute0 = np.mean([u[i, 0] * u[j, 0] for i, j in itertools.permutations(range(30), 2)])
    assert c[0] == pytest.approx(brute0, rel=1e-12)
    top = top_dimensions(x, 2)
    assert top[0][0] == 0 and top[0][2] > 0.9
    # standardising removes the rogue dimension's dominance
    mu, sigma = fit_standardiser(x)
    z = standardise(x, mu, sigma)
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(z.std(0), 1, atol=1e-12)
    assert abs(dimension_contributions(z).sum()) < 0.1


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, (12, 5), elements=st.floats(-3, 3), fill=st.nothing()),
       arrays(np.float64, (5,), elements=st.floats(-50, 50)))
def test_standardised_cosine_is_invariant_to_a_constant_shift(x, shift):
    # a (nearly) constant dimension gets sigma = 1: nothing to compare. fill=nothing() draws
    # every element, so few examples are rejected (with the default fill, 7 in 8 were)
    assume(not (x.std(0) < 1e-3).any())
    def std_cos(v):
        mu, sigma = fit_standardiser(v)
        z = standardise(v, mu, sigma)
        return cosine(z[:6], z[6:])
    np.testing.assert_allclose(std_cos(x + shift), std_cos(x), atol=1e-6)


def test_constant_dimension_gets_sigma_one():
    x = np.array([[1.0, 2.0], [3.0, 2.0], [5.0, 2.0]])
    mu, sigma = fit_standardiser(x)
    assert sigma[1] == 1.0
    np.testing.assert_array_equal(standardise(x, mu, sigma)[:, 1], 0.0)
