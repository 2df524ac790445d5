"""NCIMP's concept (ncprobe.ncimp.concept) through the probe seam, with GloVe: one row per
compound and naturalistic sentence, its label the compound's class in NCTTI (read here with
pandas), its group the compound, its vectors GloVe's own of that sentence, read one view at a
time; no held-out split; bad input is named."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ncprobe import probes as registry
from ncprobe.errors import UsageError

GLOVE = "glove-6b-50d"


def test_rows_are_the_compounds_classes_with_glove_vectors(raw_dir, tmp_path,
                                                           monkeypatch) -> None:
    from ncprobe.data import load_stimuli
    from ncprobe.embed import Embeddings
    from ncprobe.encoders import load_encoder

    reads: list[tuple[str, int]] = []
    part = Embeddings.part

    def logged(self, name, view):
        reads.append((name, view))
        return part(self, name, view)

    monkeypatch.setattr(Embeddings, "part", logged)
    nctti = pd.read_csv(raw_dir / "marcospln+nctti/data/data_en.tsv", sep="\t")
    wanted = {c.strip().lower(): {"NC": "I"}.get(s.strip(), s.strip())
              for c, s in zip(nctti["compound"], nctti["CompScale"], strict=True)}
    with registry.concept("ncimp", GLOVE, "en", data_dir=raw_dir,
                          cache_dir=tmp_path / "c") as concept:
        assert reads == []
        assert concept.classes == ("I", "PC", "C") and concept.held is None
        assert concept.views == (("-", "sent"), ("-", "nc"))  # GloVe: one view, both levels
        span = concept.rows("-", "nc")
        assert reads == [("span", 0)]
        sent = concept.rows("-", "sent")
        assert reads == [("span", 0), ("sent", 0)]  # one read per call
    assert span.x_held is None and span.y_held is None and span.groups_held is None
    # every compound NCTTI classes, once in each of S1, S2, S3; labels are its class
    groups = span.groups_train.tolist()
    assert sorted(set(g.lower() for g in groups)) == sorted(wanted)
    assert all(groups.count(g) == 3 for g in set(groups))
    assert sorted(span.ids_train) == sorted(f"{c}:{g}" for g in set(groups)
                                            for c in ("S1", "S2", "S3"))
    assert [concept.classes[y] for y in span.y_train] == [wanted[g.lower()] for g in groups]
    assert sent.ids_train.tolist() == span.ids_train.tolist()
    # GloVe's own vectors of those sentences
    with warnings.catch_warnings(record=True) as caught:  # the concept's notes say them
        warnings.simplefilter("always")
        stim = {f"{s.context}:{s.nc}": s for s in load_stimuli(
            "en", contexts="nat", probes=(), data_dir=raw_dir) if s.probe == "original"}
    uses = [stim[i] for i in span.ids_train]
    direct = load_encoder(GLOVE, "en").encode([s.tokens for s in uses], [s.span for s in uses])
    np.testing.assert_array_equal(span.x_train, direct.span[:, 0, :].astype(np.float64))
    np.testing.assert_array_equal(sent.x_train, direct.sent[:, 0, :].astype(np.float64))
    assert any("without a compositionality class" in n for n in concept.notes)
    assert all(str(w.message) in concept.notes for w in caught)


def test_bad_input_is_named(bert_dir, tmp_path) -> None:
    cache = tmp_path / "c"
    with pytest.raises(UsageError, match="unknown NCIMP language 'fr'"):
        registry.concept("ncimp", GLOVE, "fr", cache_dir=cache)
    with pytest.raises(UsageError, match="layer"):  # the tiny BERT has 3
        registry.concept("ncimp", str(bert_dir), "en", layers="9", cache_dir=cache)
    with pytest.raises(UsageError, match="takes no option setting"):
        registry.concept("ncimp", GLOVE, "en", cache_dir=cache, setting="few-shot")
    assert not cache.exists()  # refused before any encoding
