"""The names ncprobe uses everywhere: vocabularies, column names and display labels.

Every other module takes these from here; this one imports nothing of ncprobe (and nothing
but :mod:`typing`), so any module may import it. Three parts:

* **vocabularies**, the values the stimuli and the results hold: languages, sentence
  contexts and context groups, probe families, measures, levels, vector spaces, classes,
  analyses, the choices of the run options (``wordssyn``, ``gold``, ``en_naturalistic``,
  ``dtype``) and of the correction, and the tables of a results directory; every option
  that takes one of them checks it with :func:`check_choice`;
* **column names** of the results tables;
* **display labels**, how figures and tables print those values: one label per measure
  (:data:`MEASURE_LABELS`, typeset for the figures in :data:`MEASURE_MATH_LABELS`), level
  and class, and the condition labels (``EN-Nat`` ...,
  :func:`condition_label`).

Names that look alike and are not the same:

* a *probe* is a question asked of a model (NCIMP, IdioLink: :mod:`ncprobe.probes`); a
  *substitution* is one of NCIMP's minimal-pair variants (P_Syn, P_Comp, P_WordsSyn, P_Rand),
  the values of the tables' column ``probe`` and of the stimuli loaders' ``probes=``.
  :data:`SUBSTITUTIONS` are the stimuli's (``original`` and the five substitutions;
  ``ncprobe.SUBSTITUTIONS``); :data:`DISPLAY_SUBSTITUTIONS` the four that the figures and
  tables show (``comp`` is the per-sentence max of ``comp-head`` and ``comp-mod``);
  :data:`SUBSTITUTION_MEASURES` the measures that are a substitution's Sim (the five and
  ``comp``).
* the measure ``comp`` (P_Comp) is not the gold score: the results tables name that
  :data:`GOLD` (``gold``); the run option ``gold`` chooses which score it holds, ``comp``
  (Eq. 1, token level, the ``comp_token`` column) or ``type`` (``comp_type``).
* :data:`CONTEXTS` are sentence contexts (``S1`` ... ``Npl``, ``NCS``: the stimuli, the
  ``cosines`` and ``sentences`` tables); :data:`CONTEXT_GROUPS` the per-NC context groups
  (``nat``, ``neut``, ``neut-pl``, ``ncs``: every other results table). The context group
  ``ncs`` (the NCS dataset's sentences) is not the results table ``ncs`` (one row per NC).
* :data:`RESULT_TABLES` are the tables of a :class:`~ncprobe.ncimp.results.Results` (parquet
  files; ``ncprobe.TABLES``); :data:`PAPER_TABLES` the study's tables
  (:mod:`ncprobe.ncimp.tables`, Markdown and LaTeX).

The ``typing.Literal`` types (``Lang``, ``Level`` ...) are the same values for editors and
type checkers; the tuples are made from them (``typing.get_args``) wherever the order of
the values is the order of the type.
"""

from __future__ import annotations

from typing import Literal, Sequence, TypeVar, get_args

T = TypeVar("T")

# ---------------------------------------------------------------------------------------------
# vocabularies

#: Languages of the NCIMP data (a user's own pairs may have others).
Lang = Literal["en", "pt"]
LANGS: tuple[str, ...] = get_args(Lang)

#: Sentence contexts: naturalistic S1-S3, neutral (singular) N, neutral plural Npl (NCIMP),
#: and NCS, the neutral sentences of the NCS dataset (Garcia et al. 2021, the same NCs:
#: :mod:`ncprobe.data.ncs`; its P_Rand probes are generated, which needs ``wordfreq``).
NATURALISTIC: tuple[str, ...] = ("S1", "S2", "S3")
NEUTRAL = "N"
NEUTRAL_PLURAL = "Npl"
NCS_CONTEXT = "NCS"
#: The contexts of the NCIMP files (the study's), what the alias ``all`` stands for.
NCIMP_CONTEXTS: tuple[str, ...] = NATURALISTIC + (NEUTRAL, NEUTRAL_PLURAL)
CONTEXTS: tuple[str, ...] = NCIMP_CONTEXTS + (NCS_CONTEXT,)
#: :data:`CONTEXTS` as a type.
SentenceContext = Literal["S1", "S2", "S3", "N", "Npl", "NCS"]

#: Per-NC context groups and the sentence contexts each stands for (``nat`` values are the
#: mean over S1-S3), in the order they are shown.
ContextGroup = Literal["nat", "neut", "neut-pl", "ncs"]
CONTEXT_GROUPS: dict[str, tuple[str, ...]] = dict(zip(
    get_args(ContextGroup), (NATURALISTIC, (NEUTRAL,), (NEUTRAL_PLURAL,), (NCS_CONTEXT,)),
    strict=True))
#: The context group of each sentence context.
GROUP_OF_CONTEXT: dict[str, str] = {c: g for g, cs in CONTEXT_GROUPS.items() for c in cs}
#: Context groups that figures and tables show unless others are asked for (the study's).
DEFAULT_CONTEXT_GROUPS: tuple[str, ...] = ("nat", "neut")
#: Context groups that figures and tables also show by default wherever the results hold
#: them: a run computes them only when asked (``--context neut,ncs``), so a report shows them.
SHOWN_WHEN_PRESENT: tuple[str, ...] = ("ncs",)
#: A column ``context`` of the results: sentence contexts or context groups, by table.
Context = Literal[ContextGroup, SentenceContext]
#: What ``contexts=`` options accept besides context ids (``load_stimuli``, ``RunConfig``).
#: ``all`` is the five NCIMP contexts, not ``NCS`` (which needs the optional ``wordfreq``
#: package): ask for it by name, ``all,ncs``.
CONTEXT_ALIASES: dict[str, tuple[str, ...]] = {
    "nat": NATURALISTIC, "naturalistic": NATURALISTIC, "neut": (NEUTRAL,),
    "neutral": (NEUTRAL,), "neut-pl": (NEUTRAL_PLURAL,), "plural": (NEUTRAL_PLURAL,),
    "ncs": (NCS_CONTEXT,), "all": NCIMP_CONTEXTS}

#: The substitutions of the study: P_Syn, P_Comp (head and modifier kept apart), P_WordsSyn,
#: P_Rand; the values of the column ``probe`` of the ``cosines`` table.
Substitution = Literal["syn", "comp-head", "comp-mod", "wordssyn", "rand"]
#: The substitutions of the stimuli, and ``original``, the NC itself (``ncprobe.SUBSTITUTIONS``).
SUBSTITUTIONS: tuple[str, ...] = ("original",) + get_args(Substitution)
#: What ``probes=`` options accept besides probe families.
SUBSTITUTION_ALIASES: dict[str, tuple[str, ...]] = {"comp": ("comp-head", "comp-mod"),
                                             "all": SUBSTITUTIONS}
#: The probe families of the study's figures and tables: P_Comp is the per-sentence max of
#: the head and modifier substitutions (the components are in the results, not shown).
DISPLAY_SUBSTITUTIONS: tuple[str, ...] = ("syn", "comp", "wordssyn", "rand")

#: The measures (method §3, :mod:`ncprobe.ncimp.measures`): Sim of each probe (and ``comp``), the
#: Affinities (Eq. 4), the Scaled Similarities (Eq. 5) and their ratio, in this order.
SUBSTITUTION_MEASURES: tuple[str, ...] = ("syn", "comp-head", "comp-mod", "comp", "wordssyn",
                                          "rand")
AFFINITIES: tuple[str, ...] = ("A_Syn|WordsSyn", "A_Syn|Rand")
SCALED: tuple[str, ...] = ("Sim_R|Syn", "Sim_R|WordsSyn")
RATIO = "Sim_R|Syn/Sim_R|WordsSyn"
MEASURES: tuple[str, ...] = SUBSTITUTION_MEASURES + AFFINITIES + SCALED + (RATIO,)
#: The measures the study's figures and tables show (no ``comp-head`` / ``comp-mod``).
DISPLAY_MEASURES: tuple[str, ...] = DISPLAY_SUBSTITUTIONS + AFFINITIES + SCALED + (RATIO,)

#: Levels: the whole sentence's vector, or the NC's (the probe's) own tokens.
Level = Literal["sent", "nc"]
LEVELS: tuple[str, ...] = get_args(Level)

#: The layer view (the ``layers`` column) of a sentence-transformers model's own sentence
#: embedding (its pooling, Dense and normalisation modules after the last layer): one view,
#: sentence level only, reported once beside the layer views, whose sentence level is the
#: method's mean of the word vectors of those layers.
OWN_VIEW = "own"
#: How :data:`OWN_VIEW` is printed.
OWN_VIEW_LABEL = "the model's own sentence embedding"

#: Vector spaces: as the model gives them, and z-scored per language and context group.
Space = Literal["raw", "standardised"]
SPACES: tuple[str, ...] = get_args(Space)

#: Compositionality classes: idiomatic, partly compositional, compositional.
Class = Literal["I", "PC", "C"]
CLASSES: tuple[str, ...] = get_args(Class)
#: The ``cls`` of the rows of the ``distributions`` table over every NC.
ALL_CLASSES = "all"
Cls = Literal[Class, "all"]

#: Analyses of the ``correlations`` table: over the NCs, over the NCs whose gold synonym
#: shares no word with the NC, over naturalistic sentences (``per_sentence`` runs).
Analysis = Literal["nc", "overlap-filtered", "sentence"]
ANALYSES: tuple[str, ...] = get_args(Analysis)

#: The choices of a run's options (:class:`~ncprobe.ncimp.config.RunConfig`, ``load_stimuli``,
#: the encoders) and of the reports' statistics, each a type and its values, in this order:
#:
#: * P_WordsSyn: the paper's single substitution (``first``) or every alternative (``all``);
WordsSyn = Literal["first", "all"]
WORDSSYN_CHOICES: tuple[str, ...] = get_args(WordsSyn)
#: * the gold score: Eq. 1, token level (``comp``), or the type-level score (``type``);
Gold = Literal["comp", "type"]
GOLD_CHOICES: tuple[str, ...] = get_args(Gold)
#: * English naturalistic contexts: the official files when present, else the reference
#:   table (``auto``), the official files or an error, or the reference table;
EnNaturalistic = Literal["auto", "official", "reference"]
EN_NATURALISTIC_CHOICES: tuple[str, ...] = get_args(EnNaturalistic)
#: * the precision a transformer runs in (the encoders also take other spellings of these:
#:   ``fp32``, ``fp16``, ``half``, ``bf16``);
Dtype = Literal["float32", "float16", "bfloat16"]
DTYPE_CHOICES: tuple[str, ...] = get_args(Dtype)
#: * the multiple-comparison correction: Holm's step-down (family-wise error rate),
#:   Benjamini-Hochberg's step-up (false discovery rate), or none.
Correction = Literal["holm", "fdr_bh", "none"]
CORRECTIONS: tuple[str, ...] = get_args(Correction)


def _alternatives(choices: Sequence[object]) -> str:
    """``'a', 'b' or 'c'``: the choices as a message lists them."""
    quoted = [repr(c) for c in choices]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def check_choice(name: str, value: T, choices: Sequence[T], *,
                 error: type[Exception] = ValueError) -> T:
    """``value`` when it is one of ``choices``; else raise ``error`` naming ``name``, the
    value and the choices: the one check of every vocabulary option.

    >>> check_choice("gold", "type", GOLD_CHOICES)
    'type'
    >>> check_choice("gold", "token", GOLD_CHOICES)
    Traceback (most recent call last):
    ...
    ValueError: gold must be 'comp' or 'type', not 'token'

    Raises:
        ValueError: (or ``error``) ``value`` is not one of ``choices``.
    """
    if value not in choices:
        raise error(f"{name} must be {_alternatives(choices)}, not {value!r}")
    return value


#: The tables of a :class:`~ncprobe.ncimp.results.Results`, in the order they are written
#: (``<table>.parquet``). ``lexical_overlap`` holds the Spearman correlations between
#: naturalistic sentence length and sentence-level Sim: the name is kept, as results
#: directories are read by these file names (the study's table is ``length_correlations``).
ResultTable = Literal["cosines", "sentences", "measures", "correlations", "distributions",
                      "lexical_overlap", "rogue", "standardisation", "ncs"]
RESULT_TABLES: tuple[str, ...] = get_args(ResultTable)

#: The study's tables (method §4, :mod:`ncprobe.ncimp.tables`), in order; ``table_<name>`` files.
PAPER_TABLES: tuple[str, ...] = (
    "sent_correlations", "nc_correlations", "length_correlations", "affinity_correlations",
    "scaled_correlations", "means", "filtered_correlations", "standardisation", "examples")
#: The study's figures (method §4, :mod:`ncprobe.ncimp.figures`), in order; ``figNN_<name>`` files.
PAPER_FIGURES: tuple[str, ...] = (
    "sent_cosines", "nc_cosines", "affinity", "affinity_by_class", "scaled_similarity",
    "simr_syn_by_class", "simr_wordssyn_by_class", "ratio", "ratio_by_class", "correlogram")

# ---------------------------------------------------------------------------------------------
# column names

#: Columns that identify one set of cosines: a model, language, vector space, layer view, level.
RUN_KEYS: tuple[str, ...] = ("model", "lang", "space", "layers", "level")
#: Columns that identify one per-NC value of a measure: a run's keys, context group and NC.
NC_KEYS: tuple[str, ...] = RUN_KEYS + ("context", "nc")
#: The column of the ``ncs`` table holding each naturalistic context's token-level score.
TOKEN_SCORE_COLUMNS: dict[str, str] = {c: c.lower() for c in NATURALISTIC}
#: The column of the results tables holding each NC's gold compositionality score, the gold of
#: the run (Eq. 1 or the type-level score, :data:`Gold`). Not ``comp``, which names a measure
#: (P_Comp): results directories of format 3 and older name this column ``comp``, and are read
#: with it renamed (:mod:`ncprobe.results.store`).
GOLD: str = "gold"
#: The columns of each results table, in order (:data:`GOLD` is the NC's gold score; in
#: ``ncs``, ``comp_token`` is Eq. 1, ``comp_type`` the type-level score).
RESULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "cosines": RUN_KEYS + ("context", "nc", "cls", GOLD, "probe", "variant", "target",
                           "length", "cosine"),
    "sentences": RUN_KEYS + ("context", "nc", "measure", "value"),
    "measures": NC_KEYS + ("measure", "value", "cls", GOLD),
    "correlations": RUN_KEYS + ("context", "measure", "analysis", "n", "rho", "p",
                                "significant", "ci_low", "ci_high"),
    "distributions": RUN_KEYS + ("context", "measure", "cls", "n", "mean", "sd", "ci_low",
                                 "ci_high"),
    "lexical_overlap": ("model", "lang", "space", "layers", "measure", "n", "rho", "p",
                        "significant"),
    "rogue": RUN_KEYS + ("context", "rank", "dim", "contribution", "share",
                         "expected_cosine"),
    "standardisation": ("model", "layers", "level", "lang", "context", "n", "rho", "p"),
    "ncs": ("lang", "nc", "cls", "comp_token", "comp_type", GOLD,
            *TOKEN_SCORE_COLUMNS.values(), "head", "modifier", "syn_overlap"),
}
#: The columns of :data:`RESULT_COLUMNS` that hold numbers (or booleans: ``significant``,
#: ``syn_overlap``), never text; every other column holds names (text).
RESULT_NUMERIC_COLUMNS: frozenset[str] = frozenset({
    GOLD, "variant", "length", "cosine", "value", "n", "rho", "p", "significant", "ci_low",
    "ci_high", "mean", "sd", "rank", "dim", "contribution", "share", "expected_cosine",
    "comp_token", "comp_type", *TOKEN_SCORE_COLUMNS.values(), "syn_overlap"})

# ---------------------------------------------------------------------------------------------
# display labels

#: Each level as printed.
LEVEL_LABELS: dict[str, str] = {"sent": "Sent", "nc": "NC"}
#: Each context group as printed in a condition label.
CONTEXT_GROUP_LABELS: dict[str, str] = dict(zip(CONTEXT_GROUPS,
                                                ("Nat", "Neut", "Neut-pl", "NCS"), strict=True))
#: Each class as a legend names it.
CLASS_LABELS: dict[str, str] = {"I": "I (idiomatic)", "PC": "PC (partly compositional)",
                                "C": "C (compositional)"}


def condition_label(lang: str, group: str) -> str:
    """The label of a condition, language x context group: ``("en", "nat") -> "EN-Nat"``.

    A context group that is not one of :data:`CONTEXT_GROUPS` is printed as it is.
    """
    return f"{str(lang).upper()}-{CONTEXT_GROUP_LABELS.get(str(group), str(group))}"


#: Every condition of the NCIMP languages, in the order they are shown.
CONDITIONS: tuple[str, ...] = tuple(condition_label(lang, group) for lang in LANGS
                                    for group in CONTEXT_GROUPS)
_CONDITION_PARTS = {condition_label(lang, group): (lang, group) for lang in LANGS
                    for group in CONTEXT_GROUPS}


def condition_parts(label: str) -> tuple[str, str]:
    """``(lang, context group)`` of one of :data:`CONDITIONS`: ``"EN-Nat" -> ("en", "nat")``.

    Raises:
        KeyError: ``label`` is not one of :data:`CONDITIONS`.
    """
    return _CONDITION_PARTS[label]


#: How each measure is written, the one definition both of its labels are made from: the terms
#: ``(symbol, subscript)`` of a quotient (one term but for the ratio) and a qualifier after
#: them. ``gold`` is the gold compositionality score.
_MEASURE_TERMS: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {
    "syn": ((("P", "Syn"),), ""), "comp-head": ((("P", "Comp"),), "(head)"),
    "comp-mod": ((("P", "Comp"),), "(mod)"), "comp": ((("P", "Comp"),), ""),
    "wordssyn": ((("P", "WordsSyn"),), ""), "rand": ((("P", "Rand"),), ""),
    "A_Syn|WordsSyn": ((("A", "Syn|WordsSyn"),), ""), "A_Syn|Rand": ((("A", "Syn|Rand"),), ""),
    "Sim_R|Syn": ((("Sim", "R|Syn"),), ""), "Sim_R|WordsSyn": ((("Sim", "R|WordsSyn"),), ""),
    RATIO: ((("Sim", "R|Syn"), ("Sim", "R|WordsSyn")), ""), "gold": ((("Comp", ""),), " (gold)"),
}


def _plain_label(terms: tuple[tuple[str, str], ...], after: str) -> str:
    return " / ".join(f"{sym}_{sub}" if sub else sym for sym, sub in terms) + after


def _math_label(terms: tuple[tuple[str, str], ...], after: str) -> str:
    # a symbol of several letters is one italic word (\mathit), not a product of variables;
    # subscripts upright (\mathrm), as names; the qualifier outside the math
    def term(sym: str, sub: str) -> str:
        s = sym if len(sym) == 1 else rf"\mathit{{{sym}}}"
        return rf"{s}_{{\mathrm{{{sub}}}}}" if sub else s
    if len(terms) == 1 and not terms[0][1]:
        return terms[0][0] + after
    return "$" + r"\,/\,".join(term(sym, sub) for sym, sub in terms) + "$" + after


#: The name of each measure as the study writes it, in plain text: the tables' column headers
#: (Markdown and LaTeX), the terminal's summary. ``gold`` is the gold compositionality score.
MEASURE_LABELS: dict[str, str] = {m: _plain_label(*t) for m, t in _MEASURE_TERMS.items()}
#: The same names with their subscripts typeset, in matplotlib mathtext
#: (``$A_{\mathrm{Syn|Rand}}$``): every figure's ticks, axis labels, titles and legends.
#: Made from the same definition as :data:`MEASURE_LABELS`: the two differ only in typesetting.
MEASURE_MATH_LABELS: dict[str, str] = {m: _math_label(*t) for m, t in _MEASURE_TERMS.items()}


def measure_label(measure: str, *, math: bool = False) -> str:
    """The label of a measure (or ``gold``): plain text (:data:`MEASURE_LABELS`), or with
    ``math=True`` the mathtext of the figures (:data:`MEASURE_MATH_LABELS`). A name that is
    not a measure is returned as it is."""
    return (MEASURE_MATH_LABELS if math else MEASURE_LABELS).get(measure, measure)


#: One line on what each of the study's tables shows (the report's index and LaTeX captions).
PAPER_TABLE_CAPTIONS: dict[str, str] = {
    "sent_correlations": "Spearman rho of the probes' sentence-level similarities with Comp "
                         "(- : p > 0.05)",
    "nc_correlations": "Spearman rho of the probes' NC-level similarities with Comp "
                       "(- : p > 0.05)",
    "length_correlations": "Spearman rho between naturalistic sentence length and "
                           "sentence-level similarity (- : p > 0.05)",
    "affinity_correlations": "Spearman rho of the Affinities with Comp (- : p > 0.05)",
    "scaled_correlations": "Spearman rho of the Scaled Similarities and their ratio with Comp "
                           "(- : p > 0.05)",
    "means": "Mean ± sd over NCs of every probe, Affinity and Scaled Similarity",
    "filtered_correlations": "Spearman rho with Comp without the NCs whose gold synonym "
                             "shares a word with the NC (- : p > 0.05)",
    "standardisation": "Spearman between the P_Syn cosines before and after standardisation",
    "examples": "Every measure of the example NCs (NC level)",
}

#: ncprobe's tables beyond the study's: the per-class tests (every report) and the layer-wise
#: correlations (a report of results with several single-layer views).
ADDED_TABLES: tuple[str, ...] = ("class_tests", "layers")
#: One line on what each table shows, the study's and ncprobe's.
TABLE_CAPTIONS: dict[str, str] = {
    **PAPER_TABLE_CAPTIONS,
    "class_tests": "Per-class tests: Kruskal-Wallis H across the classes I / PC / C and "
                   "pairwise two-sided Mann-Whitney U, with the rank-biserial r (positive: the "
                   "first class larger), per model, condition and measure",
    "layers": "Layer-wise Spearman rho with the gold score (ncprobe's addition): one column "
              "per layer view (0 = embeddings; views averaging several layers last; at the "
              "sentence level of a sentence-transformers model, own = the model's own "
              "sentence embedding, which is not a layer)",
}
#: The study's tables of Spearman correlations (cells with intervals, marks after correction).
CORRELATION_TABLES: tuple[str, ...] = (
    "sent_correlations", "nc_correlations", "length_correlations", "affinity_correlations",
    "scaled_correlations", "filtered_correlations")
#: The study's figures by class (marked with the per-class tests).
CLASS_FIGURES: tuple[str, ...] = ("affinity_by_class", "simr_syn_by_class",
                                  "simr_wordssyn_by_class", "ratio_by_class")

__all__ = [
    "ADDED_TABLES", "CLASS_FIGURES", "CORRELATION_TABLES", "TABLE_CAPTIONS",
    "AFFINITIES", "ALL_CLASSES", "ANALYSES", "Analysis", "CLASSES", "CLASS_LABELS", "CONDITIONS",
    "CONTEXTS", "CONTEXT_ALIASES", "CONTEXT_GROUPS", "CONTEXT_GROUP_LABELS", "CORRECTIONS",
    "Class", "Cls", "Context", "ContextGroup", "Correction", "DEFAULT_CONTEXT_GROUPS",
    "DISPLAY_MEASURES", "DISPLAY_SUBSTITUTIONS", "DTYPE_CHOICES", "Dtype",
    "EN_NATURALISTIC_CHOICES", "EnNaturalistic", "GOLD", "GOLD_CHOICES", "Gold",
    "GROUP_OF_CONTEXT", "LANGS", "LEVELS", "LEVEL_LABELS", "Lang", "Level",
    "MEASURES", "MEASURE_LABELS", "MEASURE_MATH_LABELS", "NATURALISTIC", "NCIMP_CONTEXTS",
    "NCS_CONTEXT", "NC_KEYS", "NEUTRAL", "OWN_VIEW", "OWN_VIEW_LABEL",
    "NEUTRAL_PLURAL", "PAPER_FIGURES", "PAPER_TABLES", "PAPER_TABLE_CAPTIONS",
    "SUBSTITUTION_ALIASES", "SUBSTITUTIONS", "SUBSTITUTION_MEASURES", "Substitution", "RATIO",
    "RESULT_COLUMNS", "RESULT_NUMERIC_COLUMNS", "RESULT_TABLES",
    "RUN_KEYS", "ResultTable", "SCALED", "SHOWN_WHEN_PRESENT", "SPACES", "SentenceContext",
    "Space", "TOKEN_SCORE_COLUMNS", "WORDSSYN_CHOICES", "WordsSyn", "check_choice",
    "condition_label", "condition_parts", "measure_label",
]
