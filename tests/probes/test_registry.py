"""The probe seam (ncprobe.probes): the registry, `ncprobe probes`, `ncprobe run PROBE` and its
shorthands, the one results interface, and a new probe that is one registry entry."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

import ncprobe
from ncprobe import probes as registry
from ncprobe.cli import main
from ncprobe.errors import UsageError
from ncprobe.ncimp.results import Results
from ncprobe.probes.base import Probe, ProbeResults
from ncprobe.results import store
from ncprobe.retrieval.results import RetrievalResults

from ..command import exit_code

PACKAGE = Path(ncprobe.__file__).parent
#: Where a probe's name may be compared: the probe's own package (and the registry's table).
OWN_PACKAGES = {
    "ncimp": ("ncimp.py", "data/ncimp/"),
    "idiolink": ("retrieval/", "data/idiolink.py"),
    "ncc": ("ncc/", "data/semanticqa.py", "plots/ncc.py"),
    "astitch": ("astitch/", "data/astitch.py", "plots/astitch.py"),
}
IDIOMS = "in the dock,make tracks"




def test_the_registry_lists_every_probe_with_what_it_asks(capsys) -> None:
    assert registry.probe_names() == ("ncimp", "idiolink", "ncc", "astitch", "amnesic")
    assert main(["probes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["ncimp", "idiolink", "ncc", "astitch",
                                                  "amnesic"]
    # each line: what it asks (a question), its data, its result tables
    wanted = {"ncimp": ncprobe.schema.RESULT_TABLES,
              "idiolink": ("per_query", "overall", "per_idiom", "per_subject", "tests"),
              "ncc": ("items", "accuracy", "per_class", "tests", "confusion", "mdl"),
              "astitch": ("scores", "auroc", "predictions", "linear", "tests", "excluded",
                          "mdl"),
              "amnesic": ("changes", "guarantee")}
    for line in lines:
        name = line.split()[0]
        assert "?" in line and "Data: " in line
        assert line.endswith("Tables: " + ", ".join(wanted[name]) + ".")
    assert registry.results_class("ncimp") is Results
    assert registry.results_class("idiolink") is RetrievalResults


def test_an_unknown_probe_is_refused_with_the_names(capsys) -> None:
    with pytest.raises(UsageError, match="ncimp, idiolink, ncc, astitch, amnesic"):
        registry.get_probe("nccx")
    with pytest.raises(UsageError, match="'nope'"):
        ncprobe.run("nope")
    assert exit_code(["run", "nope"]) == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    assert main(["run"]) == 2  # no probe: its help
    assert "PROBE" in capsys.readouterr().out
    assert main(["data", "check", "--probe", "ncimp,nccx"]) == 2
    assert "unknown probe 'nccx'" in capsys.readouterr().err


def _probe_names_compared(path: Path, names: set[str]) -> list[str]:
    """Where ``path`` compares a probe's name (``== "idiolink"``, ``in ("ncimp", ...)``,
    ``case "ncimp"``) or keys a dict by one: each as ``line: code``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []

    def named(node: ast.AST | None) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(e) for e in node.elts)
        return False
    for node in ast.walk(tree):
        hit = (isinstance(node, ast.Compare) and any(named(x) for x in [node.left,
                                                                        *node.comparators])
               or isinstance(node, ast.Dict) and any(named(k) for k in node.keys)
               or isinstance(node, ast.MatchValue) and named(node.value))
        if hit:
            found.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_no_module_outside_a_probe_package_compares_a_probe_name() -> None:
    names = set(registry.probe_names())
    allowed = tuple(p for own in OWN_PACKAGES.values() for p in own) + ("probes/__init__.py",)
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(allowed):
            continue
        found = _probe_names_compared(path, names)
        if found:
            offenders[rel] = found
    assert not offenders, offenders


def test_the_check_finds_a_comparison(tmp_path) -> None:
    # the scan above would pass on a tree it cannot read: it finds each form it looks for
    src = tmp_path / "m.py"
    src.write_text('if p == "idiolink":\n    pass\nKINDS = {"ncimp": 1}\n'
                   'ok = p in ("x", "ncimp")\nmatch p:\n    case "idiolink":\n        pass\n')
    assert [f.split(":")[0] for f in _probe_names_compared(src, {"ncimp", "idiolink"})] == \
        ["1", "3", "4", "6"]


def test_every_probes_results_implement_the_one_interface() -> None:
    wanted = {"load", "load_many", "to_parquet", "tables", "run_id", "notes", "select", "wide",
              "summary", "json_rows", "report", "compare"}
    assert all(hasattr(ProbeResults, name) for name in wanted)
    # the store's side is written once (the layout's), and the report's (a probe gives its
    # writer: ProbeResults.report_writer); what a probe computes is its own
    assert {"concat", "select", "wide", "summary", "json_rows", "compare"} == set(
        ProbeResults.__abstractmethods__)
    for name in registry.probe_names():
        cls = registry.results_class(name)
        assert issubclass(cls, ProbeResults) and not cls.__abstractmethods__, name
        assert isinstance(cls.layout, store.Layout) and cls.layout.probe == name


def _vectors(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    vec = tmp_path / "vec.txt"
    vec.write_text("".join(f"{w} {' '.join(f'{x:.3f}' for x in rng.normal(size=4))}\n"
                           for w in "this is a an the grey matter brain".split()))
    return vec


def test_run_ncimp_is_compute_and_prints_json_rows(raw_dir, tmp_path, monkeypatch,
                                                   capsys) -> None:
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    common = ["--model", str(_vectors(tmp_path)), "--context", "neut", "--n-boot", "0",
              "--data-dir", str(raw_dir)]
    assert main(["compute", *common, "--out", str(tmp_path / "a")]) == 0
    shorthand = capsys.readouterr().out
    assert main(["run", "ncimp", *common, "--out", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out == shorthand  # the same summary
    for f in sorted((tmp_path / "a").iterdir()):  # the same results, byte for byte
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name
    assert main(["run", "ncimp", *common, "--out", str(tmp_path / "b"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    res = Results.load(tmp_path / "b")
    cor = res.correlations[res.correlations["analysis"] == "nc"]
    assert len(rows) == len(cor)
    for row, (_, want) in zip(rows, cor.iterrows(), strict=True):
        assert (row["measure"], row["level"], row["context"]) == \
            (want["measure"], want["level"], want["context"])
        assert row["rho"] == pytest.approx(want["rho"], nan_ok=True) if row["rho"] is not None \
            else np.isnan(want["rho"])
    # Holm across the rows: the smallest p times the number of tests (capped at 1)
    ps = np.array([r["p"] for r in rows if r["p"] is not None])
    smallest = min((r for r in rows if r["p"] is not None), key=lambda r: r["p"])
    assert smallest["p_corrected"] == pytest.approx(min(1.0, ps.min() * len(ps)))
    # an option the probe does not take: exit 2, as for compute
    assert exit_code(["run", "ncimp", "--modes", "span"]) == 2


def test_run_idiolink_is_retrieve_and_ncprobe_run_is_retrieve(raw_dir, tmp_path, monkeypatch,
                                                              capsys) -> None:
    common = ["--model", "bm25", "--split", "val", "--idioms", IDIOMS, "--n-boot", "20",
              "--data-dir", str(raw_dir), "--json"]
    assert main(["retrieve", *common, "--out", str(tmp_path / "a")]) == 0
    shorthand = capsys.readouterr().out
    assert main(["run", "idiolink", *common, "--out", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out == shorthand
    for f in sorted((tmp_path / "a").iterdir()):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name
    res = ncprobe.run("idiolink", models=["bm25"], split="val", idioms=IDIOMS.split(","),
                      n_boot=20, data_dir=raw_dir, progress=False)
    loaded = RetrievalResults.load(tmp_path / "a")
    assert res.run_id == loaded.run_id
    assert json.loads(shorthand) == res.json_rows()
    # the one filter engine: a value not there is named, with the values there are
    with pytest.raises(UsageError, match="holds mode"):
        loaded.select("per_query", mode="spam")
    tests = loaded.select("tests", mode="span")
    assert len(tests) and ((tests["mode_a"] == "span") | (tests["mode_b"] == "span")).all()


# --- a new probe is one registry entry -----------------------------------------------------------

TOY_LAYOUT = store.Layout(
    "toy", ("items",), {"items": ("model", "item", "score")}, frozenset({"score"}),
    run_keys=("model",))


@dataclass(frozen=True)
class ToyConfig:
    model: str = field(default="a", metadata={"help": "the model"})
    items: int = field(default=3, metadata={"type": "positive_int", "metavar": "N",
                                            "help": "how many items (default 3)"})


@dataclass
class ToyResults(ProbeResults):
    layout: ClassVar[store.Layout] = TOY_LAYOUT
    items: pd.DataFrame
    meta: list[dict] = field(default_factory=list)

    # its directory, tables, run id and notes: ProbeResults's, through its layout

    @classmethod
    def concat(cls, results, names=None) -> "ToyResults":
        return cls(pd.concat([r.items for r in results], ignore_index=True),
                   [m for r in results for m in r.meta])

    def select(self, table=None, **filters: Any) -> pd.DataFrame:
        from ncprobe.query import filter_rows

        return filter_rows(self.items, filters, where="the items table")

    def wide(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        return self.items.pivot(index="item", columns="model", values="score")

    def summary(self, *args: Any, **kwargs: Any) -> str:
        return f"toy: mean score {self.items['score'].mean():.3f}"

    def json_rows(self) -> list[dict]:
        return self.items.to_dict("records")

    def report(self, out_dir, **options: Any) -> list[Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "toy.md").write_text(self.summary() + "\n")
        return [out / "toy.md"]

    def compare(self, other=None, **options: Any) -> pd.DataFrame:
        return pd.DataFrame({"diff": [self.items["score"].mean()
                                      - other.items["score"].mean()]})


class ToyProbe(Probe):
    name = "toy"
    asks = "Is a toy score high?"
    data = "none"
    help = "a toy probe"
    description = "A toy probe: scores its items."

    def results_class(self) -> type[ToyResults]:
        return ToyResults

    def config_class(self) -> type:
        return ToyConfig

    def run(self, config: Any = None, /, **options: Any) -> ToyResults:
        cfg = config or ToyConfig(**options)
        scores = [float(i) / cfg.items for i in range(cfg.items)]
        return ToyResults(pd.DataFrame({"model": cfg.model, "item": range(cfg.items),
                                        "score": scores}),
                          [{"config": {"model": cfg.model, "items": cfg.items}}])

    def add_run_arguments(self, parser, config=None) -> None:
        from ncprobe.probes.options import config_options

        config_options(parser, config or ToyConfig)
        parser.add_argument("--out", required=True)
        parser.add_argument("--json", action="store_true")

    def run_from_args(self, args, config=None) -> int:
        from ncprobe.probes.options import config_from_args

        res = self.run(config_from_args(args, config or ToyConfig))
        res.to_parquet(args.out)
        print(json.dumps(res.json_rows()) if args.json else res.summary())
        return 0

    def report_from_args(self, args, formats) -> int:
        written = self.results_class().load_many(args.results).report(args.out)
        print(f"{len(written)} files written to {args.out}")
        return 0

    def compare_from_args(self, args, out) -> int:
        a, b = (self.results_class().load(p) for p in (args.results_a, args.results_b))
        print(a.compare(b).to_string())
        return 0

    def models_text(self) -> str:
        return "toy models: a, b"

    def reads(self, f) -> bool:
        return False

    def data_info(self, root: Path) -> tuple[dict, list[str], list[str]]:
        return {"toy": {"items": 3}}, ["toy note"], []

    def data_info_lines(self, info: dict) -> list[str]:
        return [f"\nToy: {info['toy']['items']} items"]

    def check_data(self, root: Path):
        return [], ["toy checked"], []


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(registry.PROBES, "toy", f"{__name__}:ToyProbe")
    yield registry.get_probe("toy")
    registry._LOADED.pop("toy", None)


def test_a_new_probe_is_one_registry_entry(toy, raw_dir, tmp_path, capsys) -> None:
    assert main(["probes"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("toy  ")
    assert main(["run", "toy", "--items", "4", "--model", "b", "--out", str(tmp_path / "t")]) == 0
    assert capsys.readouterr().out.strip() == f"toy: mean score {np.mean([0, .25, .5, .75]):.3f}"
    # its own checks: exit 2
    assert exit_code(["run", "toy", "--items", "0", "--out", str(tmp_path / "t")]) == 2
    capsys.readouterr()
    assert ToyResults.load(tmp_path / "t").items["score"].tolist() == [0, .25, .5, .75]
    # report and compare find the probe from run.json
    assert main(["report", str(tmp_path / "t"), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "toy.md").read_text().startswith("toy: mean score 0.375")
    assert main(["run", "toy", "--out", str(tmp_path / "u")]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "t"), str(tmp_path / "u")]) == 0
    assert "0.041667" in capsys.readouterr().out  # 0.375 - 1/3
    assert main(["models", "--probe", "toy"]) == 0
    assert capsys.readouterr().out == "toy models: a, b\n"
    assert ncprobe.run("toy", items=2).items["score"].tolist() == [0.0, 0.5]
    # the data commands ask it for its part
    assert main(["data", "info", "--json", "--data-dir", str(raw_dir)]) in (0, 3)
    info = json.loads(capsys.readouterr().out)
    assert info["toy"] == {"items": 3} and "toy note" in info["notes"]
    assert list(info)[:7] == ["data_dir", "files", "languages", "idiolink", "ncc", "astitch",
                              "toy"]


@pytest.mark.parametrize("name", list(registry.PROBES))
def test_an_unknown_option_is_a_usage_error_naming_it_and_the_options(name) -> None:
    """Issue 38: ``ncprobe.run("ncc", bogus=1)`` raised a bare TypeError where the docstring
    promises a UsageError; still a TypeError too (what Python raises for a keyword)."""
    import dataclasses

    with pytest.raises(UsageError) as e:
        ncprobe.run(name, bogus=1)
    assert isinstance(e.value, TypeError) and e.value.exit_code == 2
    assert "'bogus'" in str(e.value)
    fields = [f.name for f in dataclasses.fields(registry.get_probe(name).config_class())]
    assert all(f in str(e.value) for f in fields)
