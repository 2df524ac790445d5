"""AStitch's concept (ncprobe.astitch.concept) through the probe seam, on a small copy of the
files and the tiny BERT: each row's label and expression are the CSV row's (read here with the
csv module), its vectors the encoder's own of that use's sentence in that view, read one view
at a time; few-shot trains, dev is held out; bad input is named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ncprobe import probes as registry
from ncprobe.errors import UsageError

from .subset import TASK, VARIANTS, make_subset, read_rows


@pytest.fixture(scope="module")
def subset(raw_dir, tmp_path_factory) -> Path:
    return make_subset(raw_dir, tmp_path_factory.mktemp("astitch-data"), per_label=3,
                       langs=("en",))


def _concept(subset, bert_dir, cache, **options):
    return registry.concept("astitch", str(bert_dir), "en", layers="all", data_dir=subset,
                            cache_dir=cache, accept_modified_data=True, **options)


def test_rows_are_the_csv_rows_with_the_encoders_vectors(subset, bert_dir, tmp_path,
                                                         monkeypatch) -> None:
    from ncprobe.astitch.probe import fit_context
    from ncprobe.data.astitch import load_astitch
    from ncprobe.embed import Embeddings
    from ncprobe.encoders import load_encoder

    reads: list[tuple[str, int]] = []
    part = Embeddings.part

    def logged(self, name, view):
        reads.append((name, view))
        return part(self, name, view)

    monkeypatch.setattr(Embeddings, "part", logged)
    csv_rows = {split: read_rows(subset / TASK / "EN" / VARIANTS[0] / f"{split}.csv")
                for split in ("train_few_shot", "dev")}
    with _concept(subset, bert_dir, tmp_path / "c") as concept:
        assert reads == []  # nothing read before a view is asked for
        assert concept.classes == ("idiomatic", "not idiomatic")  # the files' 0 and 1
        assert concept.views == tuple((v, lv) for v in "0123" for lv in ("sent", "nc"))
        # the encoder's own vectors of each use, every view at once, straight from it
        # (as the AStitch run reads them: a sentence over the tiny BERT's 128 tokens cut to
        # fit, the expression kept, ncprobe.astitch.probe.fit_context)
        data = load_astitch("en", subset, accept_modified=True)
        enc = load_encoder(str(bert_dir), "en", layers="all")
        fitted, cut = fit_context(data, data.records, enc)
        assert cut and any("were cut at their ends" in n for n in concept.notes)  # said
        recs = {(r.split, r.row): r for r in fitted}
        direct = {}
        for split, csv in csv_rows.items():
            uses = [recs[(split, k)] for k in range(1, len(csv) + 1)]
            direct[split] = enc.encode([u.tokens for u in uses], [u.span for u in uses])
        for v, view in enumerate("0123"):
            for level, part_name in (("nc", "span"), ("sent", "sent")):
                rows = concept.rows(view, level)
                assert reads[-1] == (part_name, v) and len(reads) == 2 * v + (
                    1 if level == "nc" else 2)  # one read per call, of that view only
                for ids, x, y, groups, split in (
                        (rows.ids_train, rows.x_train, rows.y_train, rows.groups_train,
                         "train_few_shot"),
                        (rows.ids_held, rows.x_held, rows.y_held, rows.groups_held, "dev")):
                    csv = csv_rows[split]
                    assert ids.tolist() == [f"{split}:{k}" for k in range(1, len(csv) + 1)]
                    assert y.tolist() == [int(r["label"]) for r in csv]
                    assert groups.tolist() == [r["sentence2"].strip().lower() for r in csv]
                    want = getattr(direct[split], part_name)[:, v, :]
                    assert x.dtype == np.float64 and x.shape == want.shape
                    np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-6)
                assert rows.dropped_train == rows.dropped_held == 0
    assert concept.meta["setting"] == "few-shot" and concept.meta["held"] == "dev"


def test_another_setting_trains_on_its_split(subset, bert_dir, tmp_path) -> None:
    csv = read_rows(subset / TASK / "EN" / VARIANTS[0] / "train_zero_shot.csv")
    with _concept(subset, bert_dir, tmp_path / "c", setting="zero-shot") as concept:
        rows = concept.rows("3", "nc")
    assert rows.ids_train.tolist() == [f"train_zero_shot:{k}" for k in range(1, len(csv) + 1)]
    assert rows.y_train.tolist() == [int(r["label"]) for r in csv]


def test_bad_input_is_named(subset, bert_dir, tmp_path) -> None:
    cache = tmp_path / "c"
    with pytest.raises(UsageError, match="unknown AStitch language 'fr'"):
        registry.concept("astitch", str(bert_dir), "fr", data_dir=subset, cache_dir=cache)
    with pytest.raises(UsageError, match="layer"):  # the tiny BERT has 3
        registry.concept("astitch", str(bert_dir), "en", layers="9", data_dir=subset,
                         cache_dir=cache)
    with pytest.raises(UsageError, match="setting='two-shot'.*few-shot"):
        _concept(subset, bert_dir, cache, setting="two-shot")
    with pytest.raises(UsageError, match="takes no option seed"):
        _concept(subset, bert_dir, cache, seed=1)
    assert not cache.exists()  # refused before any encoding
