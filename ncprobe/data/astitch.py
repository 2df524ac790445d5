"""AStitchInLanguageModels Task 1 A (the ``astitch`` probe's data): labelled uses, spans placed,
paraphrases.

AStitch (Tayyar Madabushi et al., Findings of EMNLP 2021; ``H-TayyarMadabushi/
AStitchInLanguageModels``, GPL-3.0) labels English and Portuguese sentences by how a
potentially idiomatic expression is used in each: ``0`` idiomatic, ``1`` not idiomatic. The
files are in :data:`ROOT` of the data directory, pinned in ``ncprobe/data/upstream.tsv`` (need
``extra``) and verified against their pins before they are read:

- :func:`task_file` ``(lang, split, context)``: a CSV with the header ``label,sentence1,
  sentence2`` (label, target sentence, expression). The ``excluded`` file's ``sentence1`` is
  the target sentence alone; the ``included`` file holds the same rows in the same order, its
  ``sentence1`` the previous, target and next sentences joined.
- :func:`paraphrase_file` ``(lang)``: per expression a literal paraphrase, up to three
  non-literal ones (the string ``None`` where absent) and its data split.

:func:`load_astitch` reads one language into :class:`AStitchData`. Every row is checked (a
label ``0``/``1``, a sentence, an expression), and the two context files are checked against
each other (as many rows, per row the same label and expression, the target sentence inside
the context sentence at a word boundary): each problem is a :class:`~ncprobe.errors.DataError`
naming the file, the row and the column.

Placing the expression (:func:`place_expression`), on the target sentence's whitespace words:

1. **verbatim**: the expression occurs in the sentence, case-insensitively (a run of
   whitespace in the sentence matching a space of the expression), possibly inside longer
   words (``mailing lists,`` holds ``mailing list``). The span is the words that overlap its
   first occurrence; ``prefix`` / ``suffix`` are the characters of the first / last span word
   before / after the match (``""`` / ``"s,"``).
2. otherwise **the inflection rule** (Portuguese plurals and gender, hyphen or space): hyphen
   and space are one separator. The expression's parts ``e_1..e_k`` are its words split on
   hyphens. The sentence's parts are its whitespace words split on hyphens, each stripped of
   its leading and trailing non-alphanumeric characters (:meth:`str.isalnum`); a part left
   empty is dropped (a run of separators is one separator). A *place* is ``k`` consecutive
   parts where each part, lower-cased, begins with its ``e_j`` less the last two letters when
   ``e_j`` has more than four letters (else with all of ``e_j``) and is at most three letters
   longer than ``e_j``; the first place is taken (``efeitos especiais`` for ``efeito
   especial``, ``gelo seco`` for ``gelo-seco``). The span is the words that hold its parts;
   ``prefix`` is the first word's text before the first part (its leading punctuation, and
   the word's earlier hyphenated parts when the place begins inside a hyphenated word),
   ``suffix`` the last word's text after the last part (its trailing punctuation, and so on):
   an inflected form is replaced whole when a paraphrase is spliced in.
3. otherwise the row is :class:`Unplaced`: kept, with a note naming its split and row, never
   dropped silently.

Then the **punctuation is peeled** off the span (:func:`peel`): the leading non-alphanumeric
characters of ``prefix`` (``lead``: a quote, a bracket) and the trailing ones of ``suffix``
(``trail``: a comma, a full stop, a closing quote) become words of their own beside the span,
so no span vector pools them and a splice keeps them in the sentence around the paraphrase:
``mailing lists,`` is the span ``mailing lists`` (suffix ``s``) and the word ``,``; ``“efeitos
especiais”,`` is ``“`` + ``efeitos especiais`` + ``”,``. What stays in the span's words is the
inflection (``s``) and the characters joined to the expression without punctuation between
(``ex-`` of ``ex-deputados``); internal hyphens and apostrophes stay. Only the span's first
and last words are split; the other words of the sentence stay whitespace words. The rows
whose span lost punctuation are counted in the notes, per split.

The context span is the span shifted by the number of words of the context sentence before
the target sentence's first occurrence in it at a word boundary (both whitespace-normalised;
the context's span words peeled alike). :func:`spliced` puts a paraphrase in the span
(``prefix + phrase + suffix``), through :func:`ncprobe.data.splice.splice_phrase`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ErrorSink, UsageError
from ..schema import LANGS
from .ncimp import modified_note
from .reading import RESTORE, LoadContext, Table
from .sources import resolve_data_dir
from .splice import splice_phrase

#: The files of Task 1 A, in the order they are read and reported.
SPLITS: tuple[str, ...] = ("train_zero_shot", "train_one_shot", "train_few_shot", "dev", "test")
#: The target sentence alone, or with the previous and next sentences (the two file variants:
#: the column ``context`` of the tables).
VARIANTS: tuple[str, ...] = ("excluded", "included")

__all__ = ["COLUMNS", "PARAPHRASE_COLUMNS", "ROOT", "AStitchData", "AStitchRecord",
           "Paraphrases", "Placement", "Unplaced", "astitch_counts", "counts_lines",
           "load_astitch", "paraphrase_file", "peel", "place_expression", "split_file",
           "spliced", "task_file", "SPLITS", "VARIANTS"]

#: The dataset's folder inside the data directory.
ROOT = "H-TayyarMadabushi+AStitchInLanguageModels/Dataset"
#: The columns of a task file: the label, the sentence, the expression.
COLUMNS: tuple[str, ...] = ("label", "sentence1", "sentence2")
#: The columns a paraphrase file must have (and one or more ``Non-Literal Meaning <n>``).
PARAPHRASE_COLUMNS: tuple[str, ...] = ("Multiword Expression", "Literal Meaning", "Data Split")
_NONLITERAL = "Non-Literal Meaning"
#: A paraphrase cell that holds no paraphrase.
_ABSENT = "None"
_FOLDER = {"excluded": "ContextExcluded_IdiomIncluded", "included": "ContextIncluded_IdiomIncluded"}
_LABELS = {"0": 0, "1": 1}
_WORD = re.compile(r"\S+")
_SEPARATOR = re.compile(r"[\s\-]+")


def task_file(lang: str, split: str, context: str) -> str:
    """A Task 1 A file, inside the data directory.

    >>> task_file("pt", "dev", "included").split("/", 1)[1]
    'Dataset/Task1/SubTaskA/PT/ContextIncluded_IdiomIncluded/dev.csv'
    """
    return f"{ROOT}/Task1/SubTaskA/{lang.upper()}/{_FOLDER[context]}/{split}.csv"


def split_file(lang: str, split: str) -> str:
    """A split's file of target sentences (the ``excluded`` context), as errors name it."""
    return task_file(lang, split, "excluded")


def paraphrase_file(lang: str) -> str:
    """A language's paraphrase file (the Extended Noun Compound Senses Dataset)."""
    code = lang.upper()
    return (f"{ROOT}/Extended_Noun_Compound_Senses_Dataset/"
            f"{code}_Extended_Noun_Compound_Senses_Dataset.csv")


@dataclass(frozen=True)
class AStitchRecord:
    """One labelled use: a row of a Task 1 A split, its expression placed in its sentence.

    Attributes:
        lang: ``en`` or ``pt``.
        split: one of :data:`SPLITS`.
        row: the 1-based data row of both CSV files (the header is line 1, row r line r + 1).
        label: ``0`` idiomatic, ``1`` not idiomatic.
        expression: the file's ``sentence2`` as it is (lower case).
        tokens: the target sentence (the ``excluded`` file's ``sentence1``) split on
            whitespace, the span's punctuation peeled off as words of their own
            (:attr:`punctuation`, :func:`peel`).
        span: ``(start, end)``, the words of :attr:`tokens` that hold the expression.
        context_tokens: the ``included`` file's ``sentence1`` split on whitespace, peeled
            alike.
        context_span: the same words inside :attr:`context_tokens`.
        placed: ``verbatim`` or ``inflected`` (the module's inflection rule).
        prefix: the characters of the first span word before the expression (its leading
            punctuation peeled off).
        suffix: the characters of the last span word after the expression (its trailing
            punctuation peeled off: the inflection).
        file: the ``excluded`` file, inside the data directory.
        punctuation: ``(lead, trail)``, the punctuation peeled off the span's first and last
            words (``("", "")``: none).
    """

    lang: str
    split: str
    row: int
    label: int
    expression: str
    tokens: tuple[str, ...]
    span: tuple[int, int]
    context_tokens: tuple[str, ...]
    context_span: tuple[int, int]
    placed: str
    prefix: str
    suffix: str
    file: str
    punctuation: tuple[str, str] = ("", "")

    @property
    def span_text(self) -> str:
        """The span's words, the punctuation peeled off them left out (``mailing lists`` of
        ``mailing lists,``)."""
        return " ".join(self.tokens[self.span[0]:self.span[1]])


@dataclass(frozen=True)
class Unplaced:
    """A row whose expression could not be placed in its sentence (left out of the records)."""

    lang: str
    split: str
    row: int
    expression: str
    file: str
    why: str


@dataclass(frozen=True)
class Paraphrases:
    """An expression's paraphrases (a row of the paraphrase file).

    Attributes:
        lang: ``en`` or ``pt``.
        expression: the ``Multiword Expression`` cell, stripped and lower-cased (the key).
        literal: the literal paraphrase, or ``None`` where the cell is ``None``.
        nonliteral: the non-literal paraphrases present, in column order (``None`` cells
            left out).
        split: the ``Data Split`` cell (``train``, ``dev`` or ``test``).
    """

    lang: str
    expression: str
    literal: str | None
    nonliteral: tuple[str, ...]
    split: str


@dataclass
class AStitchData:
    """One language of AStitch Task 1 A: the placed rows, the unplaced ones, the paraphrases.

    Attributes:
        lang: ``en`` or ``pt``.
        records: the placed rows, the splits in :data:`SPLITS` order, file
            order within.
        unplaced: the rows whose expression could not be placed.
        paraphrases: expression (stripped, lower case) -> its paraphrases.
        notes: the counts, what was tolerated, every unplaced row by split and row, one line
            each.
        sources: file -> git blob id of each file read.
        modified: file -> ``{"blob": found, "pinned": pinned}`` of the files used although
            they differ from their pin (``accept_modified=True``).
    """

    lang: str
    records: tuple[AStitchRecord, ...]
    unplaced: tuple[Unplaced, ...]
    paraphrases: dict[str, Paraphrases]
    notes: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    modified: dict[str, dict] = field(default_factory=dict)

    def split(self, name: str) -> list[AStitchRecord]:
        """The placed rows of one split, in file order.

        Raises:
            UsageError: ``name`` is not one of :data:`SPLITS`.
        """
        _check_split(name)
        return [r for r in self.records if r.split == name]

    def labels(self, name: str) -> dict[int, int]:
        """Placed rows of one split per label: ``{0: idiomatic, 1: not idiomatic}``."""
        c = Counter(r.label for r in self.split(name))
        return {0: c[0], 1: c[1]}

    def expressions(self, name: str) -> list[str]:
        """The distinct expressions of a split's placed rows, in order of first row."""
        return list(dict.fromkeys(r.expression for r in self.split(name)))


def _check_split(name: str) -> None:
    if name not in SPLITS:
        raise UsageError(f"unknown AStitch split {name!r}; the splits are " + ", ".join(SPLITS))


# --- placing ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Placement:
    """Where an expression is in a sentence's whitespace words: see :func:`place_expression`.

    ``span`` counts whitespace words; ``lead`` and ``trail`` are the punctuation of its first
    and last words that :func:`peel` makes words of their own, ``prefix`` and ``suffix`` what
    else the span's words hold outside the expression.
    """

    span: tuple[int, int]
    placed: str
    prefix: str
    suffix: str
    lead: str = ""
    trail: str = ""


def place_expression(sentence: str, expression: str) -> Placement | None:
    """Place an expression in a sentence's whitespace words: verbatim, else by the inflection
    rule (the module docstring states both), else ``None``; the span words' leading and
    trailing punctuation apart from the rest of their prefix and suffix.

    >>> place_expression("Join our mailing lists, now", "mailing list")
    Placement(span=(2, 4), placed='verbatim', prefix='', suffix='s', lead='', trail=',')
    >>> place_expression('Os "efeitos especiais": caros.', "efeito especial")
    Placement(span=(1, 3), placed='inflected', prefix='', suffix='', lead='"', trail='":')
    """
    words = list(_WORD.finditer(sentence))
    found = _verbatim(sentence, words, expression)
    found = found if found is not None else _inflected(words, expression)
    if found is None:
        return None
    prefix, suffix = _strip_lead(found.prefix), _strip_trail(found.suffix)
    return Placement(found.span, found.placed, prefix, suffix,
                     found.prefix[:len(found.prefix) - len(prefix)], found.suffix[len(suffix):])


def _strip_lead(text: str) -> str:
    """``text`` without its leading non-alphanumeric characters."""
    i = 0
    while i < len(text) and not text[i].isalnum():
        i += 1
    return text[i:]


def _strip_trail(text: str) -> str:
    """``text`` without its trailing non-alphanumeric characters."""
    j = len(text)
    while j > 0 and not text[j - 1].isalnum():
        j -= 1
    return text[:j]


def peel(tokens: tuple[str, ...], span: tuple[int, int], lead: str, trail: str
         ) -> tuple[tuple[str, ...], tuple[int, int]]:
    """The words with ``lead`` split off the front of the span's first word and ``trail`` off
    the end of its last, each a word of its own outside the span (``""``: nothing split).

    >>> peel(("a", '"fat', "cats,", "b"), (1, 3), '"', ",")
    (('a', '"', 'fat', 'cats', ',', 'b'), (2, 4))
    >>> peel(("(list)",), (0, 1), "(", ")")
    (('(', 'list', ')'), (1, 2))
    """
    words = list(tokens)
    a, b = span
    if trail:
        last = words[b - 1]
        assert last.endswith(trail) and len(last) > len(trail), (last, trail)
        words[b - 1:b] = [last[:-len(trail)], trail]
    if lead:
        first = words[a]
        assert first.startswith(lead) and len(first) > len(lead), (first, lead)
        words[a:a + 1] = [lead, first[len(lead):]]
        a, b = a + 1, b + 1
    return tuple(words), (a, b)


def _verbatim(sentence: str, words: list[re.Match], expression: str) -> Placement | None:
    pattern = r"\s+".join(re.escape(w) for w in expression.split())
    if not pattern:
        return None
    # a regex rather than str.lower().find: lower() can change a string's length (U+0130),
    # which would shift every offset after it
    m = re.search(pattern, sentence, re.IGNORECASE)
    if m is None:
        return None
    hit = [i for i, w in enumerate(words) if w.start() < m.end() and m.start() < w.end()]
    first, last = words[hit[0]], words[hit[-1]]
    return Placement((hit[0], hit[-1] + 1), "verbatim",
                     sentence[first.start():m.start()], sentence[m.end():last.end()])


def _inflected(words: list[re.Match], expression: str) -> Placement | None:
    want = [p for p in _SEPARATOR.split(expression.lower()) if p]
    if not want:
        return None
    # (word index, start, end) of each part's alphanumeric core, inside its word
    parts: list[tuple[int, int, int, str]] = []
    for wi, w in enumerate(words):
        text, offset = w.group(), 0
        for piece in text.split("-"):
            a, b = 0, len(piece)
            while a < b and not piece[a].isalnum():
                a += 1
            while b > a and not piece[b - 1].isalnum():
                b -= 1
            if a < b:
                parts.append((wi, offset + a, offset + b, piece[a:b].lower()))
            offset += len(piece) + 1
    k = len(want)
    for i in range(len(parts) - k + 1):
        if all(_part_matches(parts[i + j][3], want[j]) for j in range(k)):
            wi0, a, _, _ = parts[i]
            wi1, _, b, _ = parts[i + k - 1]
            return Placement((wi0, wi1 + 1), "inflected", words[wi0].group()[:a],
                             words[wi1].group()[b:])
    return None


def _part_matches(part: str, e: str) -> bool:
    """The inflection rule for one part: begins with the stem of ``e``, at most 3 longer."""
    stem = e[:-2] if len(e) > 4 else e
    return part.startswith(stem) and len(part) <= len(e) + 3


def _context_offset(target: str, context: str) -> int | None:
    """Words of ``context`` before ``target``'s first occurrence at a word boundary (both
    whitespace-normalised), or ``None`` where it does not occur."""
    t, c = " ".join(target.split()), " ".join(context.split())
    start = c.find(t)
    while start >= 0:
        end = start + len(t)
        if (start == 0 or c[start - 1] == " ") and (end == len(c) or c[end] == " "):
            return len(c[:start].split())
        start = c.find(t, start + 1)
    return None


def spliced(record: AStitchRecord, phrase: str, *, context: bool
            ) -> tuple[tuple[str, ...], tuple[int, int]]:
    """The record's sentence with ``phrase`` in place of the expression.

    The span's words become ``prefix + phrase + suffix``, so the characters around the
    expression stay (``mailing lists,`` with ``address list`` gives ``address lists,``).

    Args:
        record: the labelled use.
        phrase: the substitute (a paraphrase).
        context: splice into the context sentence (:attr:`AStitchRecord.context_tokens`)
            instead of the target sentence.

    Returns:
        The new words and the span of the substitute's words in them.

    Raises:
        UsageError: the phrase is empty.
    """
    tokens, span = ((record.context_tokens, record.context_span) if context
                    else (record.tokens, record.span))
    return splice_phrase(tokens, span, record.prefix + phrase + record.suffix)


# --- loading ---------------------------------------------------------------------------------

def load_astitch(lang: str, data_dir: str | Path | None = None, *,
                 accept_modified: bool = False, collect: bool = False) -> AStitchData:
    """Load one language of AStitch Task 1 A and its paraphrases, verified and checked.

    Args:
        lang: ``en`` or ``pt``.
        data_dir: the data directory (default: ``$NCPROBE_DATA``, then the cache), the one
            ``ncprobe data download`` fills.
        accept_modified: use files whose git blob id differs from their pin (listed in
            ``AStitchData.modified`` and in a ``MODIFIED DATA`` note) instead of stopping.
        collect: report every problem at once (:class:`~ncprobe.errors.DataErrors`) instead
            of stopping at the first.

    Returns:
        :class:`AStitchData`.

    Raises:
        UsageError: an unknown language.
        DataError: a file is missing, unreadable or differs from its pin, or lacks a column;
            a label is not ``0``/``1``; a sentence or expression is empty; the two context
            files differ in rows, labels or expressions, or a target sentence is not in its
            context sentence; a paraphrase file repeats an expression.

    Example:
        >>> data = load_astitch("en")                           # doctest: +SKIP
        >>> len(data.split("test")), data.labels("test")        # doctest: +SKIP
        (483, {0: 149, 1: 334})
    """
    if lang not in LANGS:
        raise UsageError(f"unknown AStitch language {lang!r}; the languages are "
                         + ", ".join(LANGS))
    ctx = LoadContext(resolve_data_dir(data_dir), ErrorSink(collect=collect),
                      accept_modified=accept_modified)
    data = _load(ctx, lang, SPLITS, paraphrases=True)
    ctx.sink.raise_if_any()
    assert data is not None  # every problem was raised above
    return data


def astitch_counts(data_dir: str | Path | None = None) -> tuple[dict, list[str], list[str]]:
    """What the data directory holds of AStitch Task 1 A (``ncprobe data info``).

    The splits whose two files are present are read as they are (modified ones included:
    their pins are reported elsewhere); nothing present gives ``({}, [], [])``.

    Returns:
        ``(counts, notes, problems)``, each problem a line; ``counts[lang][split]`` is
        ``{"rows", "labels": {0: n, 1: n}, "expressions", "inflected", "unplaced"}`` (rows
        and labels count every row, placed or not; expressions the distinct ones).
    """
    ctx = LoadContext(resolve_data_dir(data_dir), ErrorSink(collect=True), accept_modified=True)
    counts: dict[str, dict] = {}
    notes: list[str] = []
    for lang in LANGS:
        splits = tuple(s for s in SPLITS
                       if all(ctx.exists(task_file(lang, s, c)) for c in VARIANTS))
        with_paraphrases = ctx.exists(paraphrase_file(lang))
        if not splits and not with_paraphrases:
            continue
        data = _load(ctx, lang, splits, paraphrases=with_paraphrases)
        if data is None:
            continue
        counts[lang] = {s: _split_counts(data, s) for s in splits}
        notes += [n for n in data.notes if not n.startswith("MODIFIED DATA")]
    return counts, notes, [str(e) for e in ctx.sink.errors]


def counts_lines(counts: dict) -> list[str]:
    """``ncprobe data info``'s lines for the counts of :func:`astitch_counts` (the label
    keys may be ints, or strings after a JSON round trip)."""
    if not counts:
        return []
    lines = ["\nAStitch Task 1 A (licence GPL-3.0):"]
    for lang, splits in counts.items():
        for split, c in splits.items():
            labels = c["labels"]
            zero, one = (labels.get(k, labels.get(str(k), 0)) for k in (0, 1))
            extra = "".join(f", {c[k]} {k}" for k in ("inflected", "unplaced") if c.get(k))
            lines.append(f"  {lang} {split}: {c['rows']} rows (placed: idiomatic / not "
                         f"idiomatic {zero} / {one}), {c['expressions']} expressions{extra}")
    return lines


def _split_counts(data: AStitchData, split: str) -> dict:
    recs = data.split(split)
    gone = [u for u in data.unplaced if u.split == split]
    labels = Counter(r.label for r in recs)
    return {"rows": len(recs) + len(gone),
            # the unplaced rows' labels are not kept: they count as rows, not per label
            "labels": {0: labels[0], 1: labels[1]},
            "expressions": len({r.expression for r in recs} | {u.expression for u in gone}),
            "inflected": sum(r.placed == "inflected" for r in recs), "unplaced": len(gone)}


@dataclass(frozen=True)
class _Row:
    """A task file's row, checked on its own."""

    row: int
    label: int
    sentence: str
    expression: str


def _load(ctx: LoadContext, lang: str, splits: tuple[str, ...], *,
          paraphrases: bool) -> AStitchData | None:
    """Read and check one language's files; problems go to ``ctx.sink``. ``None`` when any
    was found."""
    before = len(ctx.sink.errors)
    notes: list[str] = []
    records: list[AStitchRecord] = []
    unplaced: list[Unplaced] = []
    repeated: Counter = Counter()
    for split in splits:
        ex_rel, in_rel = (task_file(lang, split, c) for c in VARIANTS)
        ex_table, in_table = (ctx.table(rel, columns=COLUMNS) for rel in (ex_rel, in_rel))
        if ex_table is None or in_table is None:
            continue
        ex_rows = _task_rows(ctx, ex_rel, ex_table)
        in_rows = _task_rows(ctx, in_rel, in_table)
        if len(ex_table) != len(in_table):
            ctx.sink.error(
                f"{len(ex_table)} rows here, {len(in_table)} in {in_rel}: the two context files "
                f"must hold the same rows; {RESTORE}", file=ex_rel,
                row=min(len(ex_table), len(in_table)) + 1)
        # the rows both files hold (unequal lengths were reported above)
        for ex, inc in zip(ex_rows, in_rows, strict=False):
            if ex is None or inc is None:
                continue
            rec = _aligned(ctx, lang, split, ex_rel, in_rel, ex, inc, unplaced, repeated)
            if rec is not None:
                records.append(rec)
    para = _paraphrases(ctx, lang) if paraphrases else {}
    if len(ctx.sink.errors) > before:
        return None
    notes += _placement_notes(lang, records, unplaced)
    for rel, n in sorted(repeated.items()):
        notes.append(f"{rel}: {n} row(s) whose target sentence occurs more than once in its "
                     "context sentence (a repeated headline): the first occurrence is its place")
    if paraphrases:
        notes += _paraphrase_notes(lang, records, unplaced, para)
    ctx.flush_tolerated()
    notes += ctx.notes
    mine = {rel: m for rel, m in ctx.modified.items()
            if rel.startswith(f"{ROOT}/Task1/SubTaskA/{lang.upper()}/")
            or rel == paraphrase_file(lang)}
    for rel, m in mine.items():
        notes.insert(0, modified_note(rel, m))
    sources = {rel: blob for rel, blob in ctx.read.items()
               if rel.startswith(f"{ROOT}/Task1/SubTaskA/{lang.upper()}/")
               or rel == paraphrase_file(lang)}
    ctx.notes.clear()
    return AStitchData(lang, tuple(records), tuple(unplaced), para, notes, sources, mine)


def _task_rows(ctx: LoadContext, rel: str, table: Table) -> list[_Row | None]:
    """Each row of a task file, checked on its own (``None`` where reported)."""
    i_label, i_sent, i_expr = (table.columns.index(c) for c in COLUMNS)
    out: list[_Row | None] = []
    for r, cells in enumerate(table.rows, start=1):
        label = _LABELS.get(cells[i_label].strip())
        sentence, expression = cells[i_sent], cells[i_expr]
        ok = True
        if label is None:
            ctx.sink.error(f"label {cells[i_label][:40]!r} is neither 0 (idiomatic) nor 1 (not "
                           f"idiomatic); {RESTORE}", file=rel, row=r, column="label")
            ok = False
        if not sentence.strip():
            ctx.sink.error(f"empty sentence; {RESTORE}", file=rel, row=r, column="sentence1")
            ok = False
        if not expression.strip():
            ctx.sink.error(f"empty expression; {RESTORE}", file=rel, row=r, column="sentence2")
            ok = False
        out.append(_Row(r, label, sentence, expression) if ok and label is not None else None)
    return out


def _aligned(ctx: LoadContext, lang: str, split: str, ex_rel: str, in_rel: str, ex: _Row,
             inc: _Row, unplaced: list[Unplaced], repeated: Counter) -> AStitchRecord | None:
    """One row of both context files, checked against each other and placed."""
    r = ex.row
    ok = True
    if ex.label != inc.label:
        ctx.sink.error(f"label {ex.label} here, {inc.label} in {in_rel}: the two context files "
                       f"must label each row alike; {RESTORE}", file=ex_rel, row=r,
                       column="label")
        ok = False
    if ex.expression != inc.expression:
        ctx.sink.error(f"expression {ex.expression!r} here, {inc.expression!r} in {in_rel}: the "
                       f"two context files must hold the same rows; {RESTORE}", file=ex_rel,
                       row=r, column="sentence2")
        ok = False
    shift = _context_offset(ex.sentence, inc.sentence)
    if shift is None:
        ctx.sink.error(f"the context sentence does not hold the target sentence of {ex_rel} "
                       f"(row {r}: {' '.join(ex.sentence.split())[:80]!r}) at a word boundary; "
                       f"the two context files must hold the same rows; {RESTORE}",
                       file=in_rel, row=r, column="sentence1")
        ok = False
    if not ok or shift is None:
        return None
    target, ctx_text = " ".join(ex.sentence.split()), " ".join(inc.sentence.split())
    if ctx_text.count(target) > 1:
        repeated[in_rel] += 1
    place = place_expression(ex.sentence, ex.expression)
    if place is None:
        unplaced.append(Unplaced(
            lang, split, r, ex.expression, ex_rel,
            f"the expression {ex.expression!r} occurs in the target sentence neither verbatim "
            "(case-insensitive) nor by the inflection rule (parts that begin with its words' "
            "stems)"))
        return None
    a, b = place.span
    tokens, span = peel(tuple(ex.sentence.split()), place.span, place.lead, place.trail)
    context_tokens, context_span = peel(tuple(inc.sentence.split()), (a + shift, b + shift),
                                        place.lead, place.trail)
    return AStitchRecord(lang, split, r, ex.label, ex.expression, tokens, span,
                         context_tokens, context_span, place.placed, place.prefix,
                         place.suffix, ex_rel, (place.lead, place.trail))


def _paraphrases(ctx: LoadContext, lang: str) -> dict[str, Paraphrases]:
    rel = paraphrase_file(lang)
    table = ctx.table(rel, columns=PARAPHRASE_COLUMNS)
    if table is None:
        return {}
    nonlit_cols = [c for c in table.columns if c.startswith(_NONLITERAL)]
    if not nonlit_cols:
        ctx.sink.error(f"missing column: the file has no {_NONLITERAL!r} column (expected "
                       f"{_NONLITERAL} 1, 2, 3); {RESTORE}", file=rel, column=_NONLITERAL + " 1")
        return {}
    idx = {c: table.columns.index(c) for c in (*PARAPHRASE_COLUMNS, *nonlit_cols)}
    out: dict[str, Paraphrases] = {}
    first_row: dict[str, int] = {}
    for r, cells in enumerate(table.rows, start=1):
        key = cells[idx["Multiword Expression"]].strip().lower()
        if not key:
            ctx.sink.error(f"empty expression; {RESTORE}", file=rel, row=r,
                           column="Multiword Expression")
            continue
        if key in first_row:
            ctx.sink.error(f"expression {key!r} repeats row {first_row[key]}: each expression "
                           f"must have one row; {RESTORE}", file=rel, row=r,
                           column="Multiword Expression", key=key)
            continue
        first_row[key] = r
        values = {c: _paraphrase_cell(ctx, cells[idx[c]], rel)
                  for c in ("Literal Meaning", *nonlit_cols)}
        out[key] = Paraphrases(lang, key, values["Literal Meaning"],
                               tuple(v for c in nonlit_cols if (v := values[c]) is not None),
                               cells[idx["Data Split"]].strip())
    return out


def _paraphrase_cell(ctx: LoadContext, cell: str, rel: str) -> str | None:
    text = " ".join(cell.split())
    if text == _ABSENT:
        return None
    if not text:  # not in the pinned files: an empty cell says no more than "None"
        ctx.tolerate(f"{rel}: empty paraphrase cell read as absent (None)")
        return None
    return text


def _placement_notes(lang: str, records: list[AStitchRecord],
                     unplaced: list[Unplaced]) -> list[str]:
    by_split = Counter(r.split for r in records if r.placed == "inflected")
    inflected = sum(by_split.values())
    notes = [f"AStitch {lang}: {len(records) - inflected} rows placed verbatim, {inflected} by "
             "the inflection rule"
             + (" (" + ", ".join(f"{s} {by_split[s]}" for s in SPLITS if by_split[s]) + ")"
                if inflected else "")
             + f", {len(unplaced)} not placed"]
    peeled = Counter(r.split for r in records if any(r.punctuation))
    if peeled:
        notes.append(f"AStitch {lang}: {sum(peeled.values())} of {len(records)} rows' span "
                     "words lost their leading or trailing punctuation ("
                     + ", ".join(f"{s} {peeled[s]} of "
                                 f"{sum(r.split == s for r in records)}"
                                 for s in SPLITS if peeled[s])
                     + "): it is a word of its own beside the span, pooled into no span "
                     "vector and kept around a spliced paraphrase")
    notes += [f"AStitch {lang} {u.split} row {u.row} ({u.file}): expression {u.expression!r} "
              "not placed in its sentence; the row is left out of the probes" for u in unplaced]
    return notes


def _paraphrase_notes(lang: str, records: list[AStitchRecord], unplaced: list[Unplaced],
                      para: dict[str, Paraphrases]) -> list[str]:
    expressions = dict.fromkeys([*(r.expression for r in records),
                                 *(u.expression for u in unplaced)])
    lacking = [e for e in expressions if e.strip().lower() not in para]
    if not lacking:
        return []
    missing = set(lacking)
    rows = sum(r.expression in missing for r in records)
    return [f"AStitch {lang}: {len(lacking)} expression(s) of the task files have no row in "
            f"{paraphrase_file(lang)} ({rows} placed rows); the paraphrase probe leaves them "
            "unscored: " + ", ".join(map(repr, lacking[:20]))
            + (f" and {len(lacking) - 20} more" if len(lacking) > 20 else "")]
