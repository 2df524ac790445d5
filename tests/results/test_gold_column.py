"""The gold score's column is ``gold`` (results format 4); ``comp`` is the measure P_Comp only.

Results directories of formats 1-3, which named the gold column ``comp``, were written by
development versions of ncprobe: refused, naming the directory, never read.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ncprobe import Results
from ncprobe.errors import DataError
from tests import synthetic

#: The tables that hold the gold score, and its column's position in each (counted by hand
#: from the column lists of docs/guide/results.md).
GOLD_TABLES = {"cosines": 8, "measures": 10, "ncs": 5}


@pytest.fixture(scope="module")
def res() -> Results:
    return synthetic.build()


def _digest(df: pd.DataFrame) -> str:
    """A table's content digest as a development version wrote it into run.json (format 3):
    SHA-256 of its column names, their types and pandas' hash of every row."""
    h = hashlib.sha256()
    h.update(f"{list(df.columns)}\0{[str(t) for t in df.dtypes]}\0".encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


def write_format_3(res: Results, path: Path) -> Path:
    """A results directory as a development version wrote it: the gold column named ``comp``,
    the run id (format 3) in run.json and in every table, each table's digests in run.json."""
    out = res.to_parquet(path)
    runs = json.loads((out / "run.json").read_text())["runs"]
    frames = {f.stem: pd.read_parquet(f).rename(columns={"gold": "comp"})
              for f in sorted(out.glob("*.parquet"))}
    tables = {n: {"rows": len(df), "content": _digest(df)} for n, df in frames.items()}
    text = json.dumps({"format": 3, "tables": tables, "runs": runs}, sort_keys=True,
                      ensure_ascii=False)
    rid = hashlib.sha256(text.encode()).hexdigest()[:32]
    for name, df in frames.items():
        table = pa.Table.from_pandas(df, preserve_index=False)
        table = table.replace_schema_metadata({**table.schema.metadata,
                                               b"ncprobe.run_id": rid.encode()})
        pq.write_table(table, out / f"{name}.parquet")
        tables[name]["sha256"] = hashlib.sha256((out / f"{name}.parquet").read_bytes()
                                                ).hexdigest()
    (out / "run.json").write_text(json.dumps({"format": 3, "run_id": rid, "tables": tables,
                                              "runs": runs}, indent=2))
    return out


def test_a_format_3_directory_is_refused_naming_it(res, tmp_path) -> None:
    old = write_format_3(res, tmp_path / "old")
    assert "comp" in pd.read_parquet(old / "measures.parquet").columns  # as it was written
    for accept_edited in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # refused, not read with a warning
            with pytest.raises(DataError) as e:
                Results.load(old, accept_edited=accept_edited)
        assert e.value.exit_code == 3 and str(old) in str(e.value)
        assert "written by a development version of ncprobe: run it again" in str(e.value)


def test_a_new_directory_is_format_4_with_a_gold_column(res, tmp_path) -> None:
    out = res.to_parquet(tmp_path / "new")
    assert json.loads((out / "run.json").read_text())["format"] == 4
    for name, at in GOLD_TABLES.items():
        columns = list(pd.read_parquet(out / f"{name}.parquet").columns)
        assert columns[at] == "gold" and "comp" not in columns, name
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        back = Results.load(out)
    assert back.measures["gold"].equals(res.measures["gold"])


def test_the_measure_comp_is_still_p_comp(res, tmp_path) -> None:
    m = res.measures
    want = m[m["measure"].astype(str) == "comp"].reset_index(drop=True)
    assert len(want)
    got = res.select(measure="comp")
    assert set(got["measure"].astype(str)) == {"comp"} and len(got) == len(want)
    back = Results.load(res.to_parquet(tmp_path / "r"))
    assert len(back.select(measure="comp")) == len(want)
    w = back.wide(measure=["comp", "syn"])
    assert list(w.columns)[-3:] == ["gold", "syn", "comp"]
    raw = m[m["measure"].astype(str) == "comp"]
    by_key = {(r.model, r.lang, r.space, r.layers, r.level, r.context, r.nc): r.value
              for r in raw.itertuples()}
    for r in w.itertuples():
        assert r.comp == pytest.approx(by_key[(r.model, r.lang, r.space, r.layers, r.level,
                                               r.context, r.nc)], nan_ok=True)
