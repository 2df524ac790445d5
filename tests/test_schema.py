"""One schema module (issue 11): ncprobe.schema holds the vocabularies, column names and
display labels, and no other module writes its own.

The expected values are written out here from the study (SPEC, the README and the results
directories of the reference run), not read from the package; the source checks parse the
modules with ast.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import re
import typing
from pathlib import Path

import pytest

import ncprobe
from ncprobe import results, schema
from ncprobe.data import stimuli
from ncprobe.ncimp import config, measures, selection, tables
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp.results import Results

from . import synthetic

PKG = Path(ncprobe.__file__).parent
SOURCES = sorted(p for p in PKG.rglob("*.py") if p.name != "schema.py")

LANGS = ("en", "pt")
CONTEXTS = ("S1", "S2", "S3", "N", "Npl", "NCS")
GROUPS = ("nat", "neut", "neut-pl", "ncs")
SUBSTITUTIONS = ("original", "syn", "comp-head", "comp-mod", "wordssyn", "rand")
DISPLAY_SUBSTITUTIONS = ("syn", "comp", "wordssyn", "rand")
MEASURES = ("syn", "comp-head", "comp-mod", "comp", "wordssyn", "rand", "A_Syn|WordsSyn",
            "A_Syn|Rand", "Sim_R|Syn", "Sim_R|WordsSyn", "Sim_R|Syn/Sim_R|WordsSyn")
LEVELS = ("sent", "nc")
SPACES = ("raw", "standardised")
CLASSES = ("I", "PC", "C")
ANALYSES = ("nc", "overlap-filtered", "sentence")
RESULT_TABLES = ("cosines", "sentences", "measures", "correlations", "distributions",
                 "lexical_overlap", "rogue", "standardisation", "ncs")
PAPER_TABLES = ("sent_correlations", "nc_correlations", "length_correlations",
                "affinity_correlations", "scaled_correlations", "means",
                "filtered_correlations", "standardisation", "examples")
PAPER_FIGURES = ("sent_cosines", "nc_cosines", "affinity", "affinity_by_class",
                 "scaled_similarity", "simr_syn_by_class", "simr_wordssyn_by_class", "ratio",
                 "ratio_by_class", "correlogram")
CONDITIONS = ("EN-Nat", "EN-Neut", "EN-Neut-pl", "EN-NCS", "PT-Nat", "PT-Neut", "PT-Neut-pl",
              "PT-NCS")
#: The columns of the tables of the reference run's results directories, in order.
RESULT_COLUMNS = {
    "cosines": ["model", "lang", "space", "layers", "level", "context", "nc", "cls", "gold",
                "probe", "variant", "target", "length", "cosine"],
    "sentences": ["model", "lang", "space", "layers", "level", "context", "nc", "measure",
                  "value"],
    "measures": ["model", "lang", "space", "layers", "level", "context", "nc", "measure",
                 "value", "cls", "gold"],
    "correlations": ["model", "lang", "space", "layers", "level", "context", "measure",
                     "analysis", "n", "rho", "p", "significant", "ci_low", "ci_high"],
    "distributions": ["model", "lang", "space", "layers", "level", "context", "measure", "cls",
                      "n", "mean", "sd", "ci_low", "ci_high"],
    "lexical_overlap": ["model", "lang", "space", "layers", "measure", "n", "rho", "p",
                        "significant"],
    "rogue": ["model", "lang", "space", "layers", "level", "context", "rank", "dim",
              "contribution", "share", "expected_cosine"],
    "standardisation": ["model", "layers", "level", "lang", "context", "n", "rho", "p"],
    "ncs": ["lang", "nc", "cls", "comp_token", "comp_type", "gold", "s1", "s2", "s3", "head",
            "modifier", "syn_overlap"],
}
#: Every value of a vocabulary, and the condition labels.
VOCABULARY = set(LANGS + CONTEXTS + GROUPS + SUBSTITUTIONS + MEASURES + LEVELS + SPACES
                 + CLASSES + ANALYSES + RESULT_TABLES + PAPER_TABLES + PAPER_FIGURES
                 + CONDITIONS + DISPLAY_SUBSTITUTIONS)
#: Module-level constants outside the schema that name vocabulary values and are not a
#: vocabulary: a fact about the upstream files, and language names in a data warning.
NOT_VOCABULARIES = {("data/coverage.py", "NO_PLURAL_PROBES"),
                    ("data/ncimp/reference.py", "_LANG_NAMES")}
#: Names that held a vocabulary or display labels before the schema (and the schema's own):
#: outside ncprobe/schema.py they may only be bound to what the schema holds.
WATCHED = {"SUBSTITUTIONS", "TABLES", "LABELS", "CONTEXTS", "MEASURES", "CLASSES",
           "LANGS", "LEVELS", "CONDITIONS", "CAPTIONS", "LEVEL_NAMES", "CLASS_NAMES",
           "DEFAULT_CONTEXTS", "CONTEXT_GROUPS", "SUBSTITUTION_MEASURES", "AFFINITIES", "SCALED",
           "RATIO", "NATURALISTIC", "NEUTRAL", "NEUTRAL_PLURAL", "RUN_KEYS", "WIDE_KEYS",
           "CORRELOGRAM_MEASURES", "_TICK", "_SUBSTITUTION_TICKS", "_CONTEXT_NAMES",
           "_GROUP_CONTEXTS", "_CONTEXT_ALIASES", "_SUBSTITUTION_ALIASES", "Lang", "Level", "Space",
           "Context", "Analysis", "Cls", "Substitution", "Table"} | {
               n for n in schema.__all__ if n[0].isupper()}


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]


def _vocabulary_sequence(node: ast.AST) -> bool:
    """A tuple, list or set of two or more strings, every one a vocabulary value."""
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or len(node.elts) < 2:
        return False
    return all(isinstance(e, ast.Constant) and e.value in VOCABULARY for e in node.elts)


def _defines_vocabulary(value: ast.AST) -> bool:
    """A literal that spells out vocabulary values: a sequence of them, a ``Literal[...]`` of
    them, or a dict keyed by them (names allowed beside) whose values are labels or aliases."""
    if _vocabulary_sequence(value):
        return True
    if isinstance(value, ast.Subscript) and ast.unparse(value.value).endswith("Literal"):
        return _vocabulary_sequence(value.slice)
    if isinstance(value, ast.Dict):
        keys = [k for k in value.keys if k is not None]
        spelled = [k for k in keys if isinstance(k, ast.Constant)]
        return (len(spelled) >= 2
                and all(isinstance(k, ast.Name) or (isinstance(k, ast.Constant)
                                                    and k.value in VOCABULARY) for k in keys)
                and all(isinstance(v, (ast.Constant, ast.Tuple, ast.Name))
                        for v in value.values))
    return False


def _assignments(tree: ast.Module, *, top: bool = False):
    """(target name, value) of every assignment, at any depth (``top``: of the module)."""
    for node in (tree.body if top else ast.walk(tree)):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    yield t.id, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(
                node.target, ast.Name):
            yield node.target.id, node.value


def _docstrings(tree: ast.Module) -> set[int]:
    return {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


# --- the schema's content -----------------------------------------------------------------------

def test_the_vocabularies_are_the_studys() -> None:
    assert schema.LANGS == LANGS
    assert schema.CONTEXTS == CONTEXTS
    assert schema.NATURALISTIC == CONTEXTS[:3]
    assert (schema.NEUTRAL, schema.NEUTRAL_PLURAL) == ("N", "Npl")
    assert schema.CONTEXT_GROUPS == {"nat": ("S1", "S2", "S3"), "neut": ("N",),
                                     "neut-pl": ("Npl",), "ncs": ("NCS",)}
    assert schema.GROUP_OF_CONTEXT == {"S1": "nat", "S2": "nat", "S3": "nat", "N": "neut",
                                       "Npl": "neut-pl", "NCS": "ncs"}
    # `all` is the study's five contexts: NCS (generated P_Rand, needs wordfreq) by name only
    assert schema.CONTEXT_ALIASES["all"] == CONTEXTS[:5]
    assert schema.CONTEXT_ALIASES["ncs"] == ("NCS",)
    assert schema.DEFAULT_CONTEXT_GROUPS == ("nat", "neut")
    assert schema.SUBSTITUTIONS == SUBSTITUTIONS
    assert schema.DISPLAY_SUBSTITUTIONS == DISPLAY_SUBSTITUTIONS
    assert schema.MEASURES == MEASURES
    assert schema.DISPLAY_MEASURES == DISPLAY_SUBSTITUTIONS + MEASURES[6:]
    assert schema.LEVELS == LEVELS and schema.SPACES == SPACES
    assert schema.CLASSES == CLASSES and schema.ANALYSES == ANALYSES
    assert schema.RESULT_TABLES == RESULT_TABLES
    assert schema.PAPER_TABLES == PAPER_TABLES
    assert schema.PAPER_FIGURES == PAPER_FIGURES
    assert {k: list(v) for k, v in schema.RESULT_COLUMNS.items()} == RESULT_COLUMNS


def test_the_types_hold_the_values_of_the_vocabularies() -> None:
    args = typing.get_args
    assert args(schema.Lang) == LANGS
    assert args(schema.SentenceContext) == CONTEXTS
    assert args(schema.ContextGroup) == GROUPS
    assert set(args(schema.Context)) == set(GROUPS + CONTEXTS)
    assert args(schema.Substitution) == SUBSTITUTIONS[1:]
    assert args(schema.Level) == LEVELS and args(schema.Space) == SPACES
    assert set(args(schema.Cls)) == set(CLASSES) | {"all"}
    assert args(schema.Analysis) == ANALYSES
    assert args(schema.ResultTable) == RESULT_TABLES


def test_every_measure_has_one_label_and_the_study_names() -> None:
    labels = schema.MEASURE_LABELS
    assert set(MEASURES) <= set(labels)
    assert [labels[m] for m in DISPLAY_SUBSTITUTIONS] == ["P_Syn", "P_Comp", "P_WordsSyn", "P_Rand"]
    assert labels["Sim_R|Syn/Sim_R|WordsSyn"] == "Sim_R|Syn / Sim_R|WordsSyn"
    # one typeset form of each label for the figures, and no other
    assert set(schema.MEASURE_MATH_LABELS) == set(labels)
    assert schema.MEASURE_MATH_LABELS["A_Syn|Rand"] == r"$A_{\mathrm{Syn|Rand}}$"
    assert list(schema.LEVEL_LABELS.items()) == [("sent", "Sent"), ("nc", "NC")]


# --- condition labels ---------------------------------------------------------------------------

@pytest.mark.parametrize("lang,group,label", [
    ("en", "nat", "EN-Nat"), ("en", "neut", "EN-Neut"), ("en", "neut-pl", "EN-Neut-pl"),
    ("pt", "nat", "PT-Nat"), ("pt", "neut", "PT-Neut"), ("pt", "neut-pl", "PT-Neut-pl"),
    ("en", "ncs", "EN-NCS"), ("pt", "ncs", "PT-NCS")])
def test_condition_label(lang, group, label) -> None:
    assert schema.condition_label(lang, group) == label
    assert schema.condition_parts(label) == (lang, group)


def test_conditions_are_every_language_and_group_in_order() -> None:
    assert schema.CONDITIONS == CONDITIONS
    assert tuple(plots.CONDITION_PALETTE) == CONDITIONS
    assert schema.condition_label("de", "nat") == "DE-Nat"  # a user's own language
    with pytest.raises(KeyError):
        schema.condition_parts("EN-Natural")


@pytest.fixture(scope="module")
def res():
    return synthetic.build()


def test_figures_and_tables_label_conditions_with_the_schema(res) -> None:
    shown = [schema.condition_label(lang, group) for lang in LANGS for group in ("nat", "neut")]
    assert shown == ["EN-Nat", "EN-Neut", "PT-Nat", "PT-Neut"]
    fig = plots.fig_simr_syn_by_class(res, ideal=False)
    for ax in fig.axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == shown
    fig = plots.fig_ratio(res)
    for ax in fig.axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == shown
    legend = {t.get_text() for t in plots.fig_nc_cosines(res, ideal=False).legends[0].get_texts()}
    assert set(shown) <= legend
    sel = selection.select(res.measures)
    want = [schema.condition_label(lg, g)
            for lg, g in zip(sel["lang"], sel["context"], strict=True)]
    assert list(sel["condition"].astype(str)) == want
    length = tables.length_correlations(res)
    assert set(length.index.get_level_values("condition")) == {"EN-Nat", "PT-Nat"}
    means = tables.means(res)
    assert list(dict.fromkeys(means.index.get_level_values("condition"))) == shown


# --- the other modules take their names from the schema ------------------------------------------

def test_the_public_names_are_the_schemas_objects() -> None:
    assert ncprobe.SUBSTITUTIONS is schema.SUBSTITUTIONS
    assert ncprobe.data.SUBSTITUTIONS is schema.SUBSTITUTIONS
    assert ncprobe.TABLES is schema.RESULT_TABLES and results.TABLES is schema.RESULT_TABLES
    assert ncprobe.MEASURES is schema.MEASURES and measures.MEASURES is schema.MEASURES
    assert ncprobe.CONTEXTS is schema.CONTEXTS and stimuli.CONTEXTS is schema.CONTEXTS
    assert ncprobe.CLASSES is schema.CLASSES and stimuli.CLASSES is schema.CLASSES
    for name in ("LANGS", "NATURALISTIC", "NEUTRAL", "NEUTRAL_PLURAL"):
        assert getattr(stimuli, name) is getattr(schema, name), name
    for name in ("SUBSTITUTION_MEASURES", "AFFINITIES", "SCALED", "RATIO", "RUN_KEYS"):
        assert getattr(measures, name) is getattr(schema, name), name
    assert config.LEVELS is schema.LEVELS
    assert config.Lang is schema.Lang and config.Level is schema.Level
    assert tables.CAPTIONS is schema.TABLE_CAPTIONS
    assert tuple(schema.PAPER_TABLE_CAPTIONS) == PAPER_TABLES
    assert tuple(tables.TABLES) == PAPER_TABLES + ("class_tests",)  # layers: when layer-wise
    assert tuple(schema.TABLE_CAPTIONS) == PAPER_TABLES + schema.ADDED_TABLES
    assert tuple(plots.FIGURES) == PAPER_FIGURES
    assert [f.name for f in dataclasses.fields(Results)] == list(RESULT_TABLES) + ["meta"]


def test_frames_is_now_selection() -> None:
    assert importlib.util.find_spec("ncprobe.frames") is None
    assert not (PKG / "frames.py").exists()
    for path in [*PKG.rglob("*.py"), *(PKG.parent / "tests").glob("*.py"),
                 *(PKG.parent / "notebooks").glob("*.ipynb"), PKG.parent / "README.md"]:
        if path == Path(__file__):
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"ncprobe\.frames|from \.frames|frames\.py", text), path


def test_no_other_module_spells_out_a_vocabulary() -> None:
    # module constants; inside a class or function a literal is a choice among the values
    # (the levels an encoder gives), not their definition
    found = []
    for path in SOURCES:
        rel = path.relative_to(PKG).as_posix()
        for name, value in _assignments(ast.parse(path.read_text(encoding="utf-8")), top=True):
            if _defines_vocabulary(value) and (rel, name) not in NOT_VOCABULARIES:
                found.append(f"{rel}: {name} = {ast.unparse(value)[:60]}")
    assert not found, found


def test_the_old_vocabulary_names_are_bound_only_to_the_schemas() -> None:
    # outside the schema a watched name is an alias, or built from the schema's names: no
    # string of its own
    found = []
    for path in SOURCES:
        rel = path.relative_to(PKG).as_posix()
        for name, value in _assignments(ast.parse(path.read_text(encoding="utf-8"))):
            if name in WATCHED and _strings(value):
                found.append(f"{rel}: {name} = {ast.unparse(value)[:60]}")
    assert not found, found


def test_no_other_module_writes_a_condition_label() -> None:
    found = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docs and re.search(r"-(Nat|Neut)\b", node.value)):
                found.append(f"{path.relative_to(PKG)}:{node.lineno}: {node.value!r}")
    assert not found, found


def test_the_results_tables_have_the_columns_of_the_schema(tmp_path) -> None:
    res = synthetic.analysed_random(synthetic.pairs_stimuli(tmp_path / "pairs.csv"), "m-a", 0)
    for name in RESULT_TABLES:
        assert list(getattr(res, name).columns) == RESULT_COLUMNS[name], name


# --- the options' vocabularies and their one check ------------------------------------------

@pytest.mark.parametrize("field, choices, bad, message", [
    ("wordssyn", ("first", "all"), "some", "wordssyn must be 'first' or 'all', not 'some'"),
    ("gold", ("comp", "type"), "token", "gold must be 'comp' or 'type', not 'token'"),
    ("en_naturalistic", ("auto", "official", "reference"), "both",
     "en_naturalistic must be 'auto', 'official' or 'reference', not 'both'"),
])
def test_runconfig_and_the_loader_check_an_option_with_the_schemas_words(field, choices, bad,
                                                                         message) -> None:
    from ncprobe.data import load_stimuli

    vocabulary = {"wordssyn": schema.WORDSSYN_CHOICES, "gold": schema.GOLD_CHOICES,
                  "en_naturalistic": schema.EN_NATURALISTIC_CHOICES}[field]
    assert vocabulary == choices
    for value in choices:
        assert schema.check_choice(field, value, vocabulary) == value
    with pytest.raises(ValueError) as by_config:
        config.RunConfig(**{field: bad})
    with pytest.raises(ValueError) as by_loader:  # refused before any file is read
        load_stimuli("en", data_dir="/nonexistent", **{field: bad})
    assert str(by_config.value) == str(by_loader.value) == message


def test_the_option_vocabularies_are_their_types_values() -> None:
    args = typing.get_args
    assert args(schema.WordsSyn) == schema.WORDSSYN_CHOICES == ("first", "all")
    assert args(schema.Gold) == schema.GOLD_CHOICES == ("comp", "type")
    assert args(schema.EnNaturalistic) == schema.EN_NATURALISTIC_CHOICES
    assert args(schema.Dtype) == schema.DTYPE_CHOICES == ("float32", "float16", "bfloat16")
    assert args(schema.Correction) == schema.CORRECTIONS == ("holm", "fdr_bh", "none")
    with pytest.raises(ncprobe.errors.UsageError, match=r"^correct must be 'holm', 'fdr_bh' "
                       r"or 'none', not 'bonferroni'$"):
        schema.check_choice("correct", "bonferroni", schema.CORRECTIONS,
                            error=ncprobe.errors.UsageError)
