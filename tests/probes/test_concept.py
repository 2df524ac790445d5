"""A concept through the probe seam (ncprobe.concept, Probe.concept, ncprobe.probes.concept):
the rows a concept gives of a view are the rows it names, read in one read; a probe declares
whether it offers one, and one without it is refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from ncprobe import probes as registry
from ncprobe.concept import Concept, Side
from ncprobe.errors import UsageError
from ncprobe.probes.base import Probe

#: two views, the second at the sentence level only
VIEWS = (("0", "sent"), ("0", "nc"), ("own", "sent"))


def _source(n: int = 6, dim: int = 3):
    """Vectors of each (view, level) that say which they are: row i of view v, level l is
    i + 100 * (view index) + 1000 * (level index), in every dimension; and the reads."""
    reads: list[tuple[str, str]] = []

    def read(view: str, level: str) -> np.ndarray:
        reads.append((view, level))
        code = 100 * ["0", "own"].index(view) + 1000 * ["sent", "nc"].index(level)
        return (np.arange(n, dtype=np.float32)[:, None] + code) * np.ones((1, dim), np.float32)

    return read, reads


def test_rows_are_the_named_rows_of_one_view_in_one_read() -> None:
    read, reads = _source()
    closed = []
    train = Side([4, 0, 2], [1, 0, 1], ["b", "a", "b"], ["r4", "r0", "r2"])
    held = Side([5, 1], [0, 1], ["c", "c"], ["r5", "r1"])
    with Concept("toy", ("x", "y"), VIEWS, read, train, held,
                 close=lambda: closed.append(True)) as c:
        rows = c.rows("0", "nc")
        assert reads == [("0", "nc")]
        assert rows.x_train.dtype == np.float64 and rows.x_train.shape == (3, 3)
        np.testing.assert_array_equal(rows.x_train[:, 0], [1004, 1000, 1002])
        np.testing.assert_array_equal(rows.x_held[:, 1], [1005, 1001])
        assert rows.y_train.tolist() == [1, 0, 1] and rows.y_held.tolist() == [0, 1]
        assert rows.groups_train.tolist() == ["b", "a", "b"]
        assert rows.groups_held.tolist() == ["c", "c"]
        assert rows.ids_train.tolist() == ["r4", "r0", "r2"] and rows.has_held
        own = c.rows("own", "sent")
        assert reads == [("0", "nc"), ("own", "sent")]  # one read per call, that view's
        np.testing.assert_array_equal(own.x_train[:, 2], [104, 100, 102])
        assert c.view_names == ("0", "own")
        assert not closed
    assert closed == [True]  # the with block lets the source go


def test_no_held_out_split_gives_none() -> None:
    read, _ = _source()
    c = Concept("toy", ("x", "y", "z"), VIEWS, read,
                Side([0, 1, 2], [0, 1, 2], list("aab"), list("ijk")))
    rows = c.rows("0", "sent")
    assert rows.x_held is None and rows.y_held is None and rows.groups_held is None
    assert not rows.has_held and rows.dropped_held == 0


def test_a_view_or_level_the_concept_lacks_is_named() -> None:
    read, reads = _source()
    c = Concept("toy", ("x", "y"), VIEWS, read, Side([0, 1], [0, 1], list("ab"), list("ij")))
    with pytest.raises(UsageError, match=r"no view 'own' at level 'nc'.*0 \(sent, nc\); "
                                         r"own \(sent\)"):
        c.rows("own", "nc")
    with pytest.raises(UsageError, match="no view '7'"):
        c.rows("7", "sent")
    assert reads == []  # refused before any read


def test_rows_without_a_vector_are_left_out_and_counted() -> None:
    def read(view: str, level: str) -> np.ndarray:
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        x[1, 2] = np.nan  # a row whose vector is missing
        return x

    c = Concept("toy", ("x", "y"), (("-", "nc"),), read,
                Side([0, 1, 2], [0, 1, 1], list("abc"), list("ijk")),
                Side([1, 3], [1, 0], list("bd"), list("lm")))
    rows = c.rows("-", "nc")
    assert rows.ids_train.tolist() == ["i", "k"] and rows.dropped_train == 1
    assert rows.ids_held.tolist() == ["m"] and rows.dropped_held == 1
    np.testing.assert_array_equal(rows.x_train, [[0, 1, 2], [6, 7, 8]])


def test_labels_outside_the_classes_are_refused() -> None:
    read, _ = _source()
    with pytest.raises(ValueError, match="label outside 0..1"):
        Concept("toy", ("x", "y"), VIEWS, read, Side([0, 1], [0, 2], list("ab"), list("ij")))
    with pytest.raises(ValueError, match="one of each per row"):
        Side([0, 1], [0], list("ab"), list("ij"))


def _overrides(probe: Probe) -> bool:
    return type(probe).concept is not Probe.concept


def test_a_probe_offers_a_concept_exactly_when_it_implements_one() -> None:
    offering = [p.name for p in registry.probes() if _overrides(p)]
    assert offering == ["ncimp", "astitch"]
    assert [p.name for p in registry.probes() if p.offers_concept] == offering
    assert registry.concept_probes() == tuple(offering)


def test_a_probe_without_a_concept_is_refused_by_name() -> None:
    with pytest.raises(UsageError, match=r"probe 'ncc' offers no concept.*probes with one: "
                                         r"ncimp, astitch"):
        registry.concept("ncc", "glove-6b-50d", "en")
    # asked directly, the probe's own default names it too
    with pytest.raises(UsageError, match="probe 'idiolink' offers no concept"):
        registry.get_probe("idiolink").concept("glove-6b-50d", "en")
    with pytest.raises(UsageError, match="unknown probe 'nope'"):
        registry.concept("nope", "glove-6b-50d", "en")


def test_fitted_on_names_the_training_rows_of_the_concepts_probe_and_language() -> None:
    read, _ = _source()
    train = Side([4, 0, 2], [1, 0, 1], ["b", "a", "b"], ["r4", "r0", "r2"])
    held = Side([5, 1], [0, 1], ["c", "c"], ["r5", "r1"])
    c = Concept("toy", ("x", "y"), VIEWS, read, train, held,
                meta={"probe": "toyprobe", "lang": "en"})
    fitted = c.fitted_on
    # the training rows only, never the held-out ones
    assert fitted.ids == frozenset({"r4", "r0", "r2"})
    assert fitted.shared("toyprobe", "en", ["r0", "r1", "r5", "r9"]) == frozenset({"r0"})
    assert fitted.shared("toyprobe", "en", ["r1", "r5"]) == frozenset()
    # the same ids in another probe's data, or another language, are other rows
    assert fitted.shared("other", "en", ["r0", "r4"]) == frozenset()
    assert fitted.shared("toyprobe", "pt", ["r0", "r4"]) == frozenset()
    with pytest.raises(ValueError, match="names no probe or lang"):
        _ = Concept("toy", ("x", "y"), VIEWS, read, train).fitted_on
