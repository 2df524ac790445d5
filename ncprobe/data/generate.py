"""Generate a reviewable pairs file for a user's own compounds: :func:`generate_pairs`.

The input names each compound in a sentence; the output is a pairs file, in the format
:func:`~ncprobe.data.pairs.load_pairs` reads, with the original and the probes of each
sentence: P_Comp and frequency-matched P_Rand generated, P_Syn and P_WordsSyn from the
synonyms given (the builders are in :mod:`ncprobe.data.probes`, the frequency matching in
:mod:`ncprobe.data.frequency`). Every word outside the compound's span is kept; article and
agreement edits (``an apple tree`` -> ``a tree``, Portuguese gender) are *not* made: a
reviewer who wants them edits the written-out file. The input is read and checked row by
row with :mod:`ncprobe.data.rows`, as ``load_pairs`` reads its own.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import re
import stat
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .._io import UNWRITABLE_ERRNOS, atomic_write_text, output_error
from ..errors import DataError, ErrorSink, OutputError, UsageError
from .frequency import (
    CANDIDATES,
    MIN_LETTERS,
    RandomPhrase,
    check_lang,
    rand_words,
    require_wordfreq,
    wordfreq_version,
)
from .pairs import FIX_PAIRS
from .probes import (
    GeneratedProbe,
    comp_probes,
    item_seed,
    rand_probes,
    rand_stimuli,
    replace_rand,
    syn_probes,
)
from .rows import (
    Row,
    check_scale,
    given,
    group_errors,
    nc_info,
    parse_row,
    read_rows,
    row_context,
    row_span,
)
from .splice import find_words, span_error, splice_phrase
from .stimuli import SUBSTITUTIONS, Stimulus

# the probe builders (ncprobe.data.probes), the frequency matching (ncprobe.data.frequency)
# and splice_phrase (ncprobe.data.splice) are importable from here, where they always were
__all__ = ["CANDIDATES", "FIX_INPUT", "HEAD_RULES", "INPUT_TEXT", "MIN_LETTERS",
           "PAIRS_COLUMNS", "SCALE_HINT", "SYNONYM_SEP", "GeneratedProbe", "GenerationReport",
           "RandomPhrase", "comp_probes", "generate_pairs", "item_seed", "rand_probes",
           "rand_stimuli", "rand_words", "replace_rand", "splice_phrase", "syn_probes"]


#: Head rules for rows without ``head``/``modifier`` (:func:`generate_pairs`): the head is
#: the ``last`` part of a two-part compound (head-final: English, German, Dutch) or the
#: ``first`` (head-initial: Portuguese, Spanish, French, Italian).
HEAD_RULES = ("first", "last")
#: Columns of a pairs file written by :func:`generate_pairs`. ``load_pairs`` reads the
#: first eleven; the others are for the reviewer: ``origin`` (``given``: from the input;
#: ``generated``), and for ``rand`` rows the Zipf frequency of each chosen word, of the
#: word of the compound it replaces, their differences and the largest absolute one.
PAIRS_COLUMNS = ("lang", "nc", "context", "sentence", "start", "end", "probe", "variant",
                 "substitute", "comp", "class", "origin", "zipf", "source_zipf", "zipf_diff",
                 "max_abs_zipf_diff", "wordfreq")
#: The text columns of the input of :func:`generate_pairs`.
INPUT_TEXT = ("nc", "sentence", "head", "modifier", "class", "syn", "wordssyn", "context",
              "lang")
#: How a caller of :func:`generate_pairs` declares another scale of ``comp``.
SCALE_HINT = "--scale LOW HIGH; in Python generate_pairs(..., scale=(low, high))"
#: Separator of several synonyms in one ``syn`` or ``wordssyn`` cell of the input.
SYNONYM_SEP = ";"
#: What to do about an input file of :func:`generate_pairs` that cannot be used as it is.
FIX_INPUT = ("correct the input (UTF-8 CSV or JSON Lines: nc, sentence, start/end or span, "
             "head, modifier; optional comp, class, syn, wordssyn, context, lang) and run "
             "again")


@dataclass
class GenerationReport:
    """What :func:`generate_pairs` wrote.

    Attributes:
        path: the pairs file written.
        ncs: the compounds (``(lang, nc)``), in input order.
        rows: rows written per probe family.
        zipf_diffs: ``|Zipf difference|`` of every generated random word.
        band, seed, k: the P_Rand settings used.
        wordfreq_version: the ``wordfreq`` version whose data were used.
    """

    path: Path
    ncs: list[tuple[str, str]]
    rows: dict[str, int]
    zipf_diffs: list[float]
    band: float
    seed: int
    k: int
    wordfreq_version: str

    def summary(self) -> str:
        """A few lines: what was written, and how close the frequency match is."""
        total = sum(self.rows.values())
        per = ", ".join(f"{p} {n}" for p, n in self.rows.items() if n)
        lines = [f"wrote {total} rows for {len(self.ncs)} compound(s) to {self.path} ({per})"]
        if self.zipf_diffs:
            d = sorted(self.zipf_diffs)
            lines.append(
                f"P_Rand: {len(d)} random words, seed {self.seed}, Zipf band ±{self.band:g} "
                f"(wordfreq {self.wordfreq_version}); |Zipf difference| median "
                f"{statistics.median(d):.2f}, max {d[-1]:.2f}")
        lines.append("review the file (every generated row has origin=generated; edit or "
                     "delete rows as you see fit), then load it with ncprobe.load_pairs")
        return "\n".join(lines)


def generate_pairs(path: str | os.PathLike, out: str | os.PathLike, lang: str | None = None,
                   *, k: int = 5, seed: int = 0, band: float = 0.5, head: str | None = None,
                   ask: Callable[[str, tuple[str, ...]], str] | None = None,
                   overwrite: bool = False, scale: tuple[float, float] = (0, 5),
                   progress: Callable[[str], None] | None = None) -> GenerationReport:
    """Write a reviewable pairs file with generated probes for compounds in context.

    The input (CSV or JSON Lines, one row per compound and sentence) gives ``nc`` and
    ``sentence`` (pre-tokenised: words split by spaces); the compound's span as
    ``start``/``end`` or ``span`` (without them, the compound's words are looked up in
    the sentence and must occur exactly once); ``head`` and ``modifier`` (or ``head=``
    / ``ask=``); and optionally ``comp`` (gold score on ``scale``), ``class``
    (``I``/``PC``/``C``), ``syn`` and ``wordssyn`` (synonym phrases separated by ``;``),
    ``context`` (default ``S1``, the first naturalistic sentence: results and reports count
    such rows as naturalistic, ``nat``; give ``S1``/``S2``/``S3`` for several sentences of
    one compound, ``N`` for a neutral one) and ``lang``.

    The words are checked (nothing is written unless every row passes): ``head`` and
    ``modifier`` must each be whole words of the compound (compared case-insensitively
    after the normalisation the text gets, a hyphenated word counting as its parts:
    ``eau-forte`` is ``eau`` and ``forte``) and different words of it; a given span must
    hold exactly the compound's words (:func:`~ncprobe.data.splice.span_error`); one
    compound's sentences must differ (the same sentence in two contexts would count twice).
    A problem that several rows share is reported once, with the number of rows and which.

    Written, per input row, in the format of :func:`ncprobe.data.pairs.load_pairs` (with
    the review columns of :data:`PAIRS_COLUMNS`): the original; P_Comp (head alone,
    modifier alone: :func:`comp_probes`); ``k`` P_Rand (:func:`rand_stimuli`: same
    Zipf band, same number of words, no word of the sentence, seeded per compound); and
    P_Syn / P_WordsSyn from the synonyms given (:func:`syn_probes`). Every word outside
    the compound's span is kept. No article or agreement edit is made: edit the file.

    Args:
        path: the input file.
        out: the pairs file to write (``.csv``); an existing file is refused unless
            ``overwrite``.
        lang: language of rows without ``lang`` (a language ``wordfreq`` covers).
        k, seed, band: P_Rand phrases per sentence, seed, Zipf half-width.
        head: for rows without ``head``/``modifier``: ``last`` or ``first`` part of a
            two-part compound (parts split on spaces, or on the hyphen of one hyphenated
            word).
        ask: for rows without ``head``/``modifier`` when ``head`` is not given: called as
            ``ask(nc, parts)`` once per compound, returns the head (one of ``parts``).
        overwrite: replace an existing ``out`` (a file: a directory is refused).
        scale: the ``(low, high)`` range of ``comp``.
        progress: called with a line of progress (``compound 3 of 10: ...``, and before
            the candidate words of a language are scored, which takes seconds); ``None``:
            silent.

    Returns:
        A :class:`GenerationReport` (``.summary()`` for the user).

    Raises:
        DataError / DataErrors: bad rows in the input (every one, with file, row and
            column; nothing is written) or an unreadable input.
        UsageError: a bad option, ``out`` exists (or is a directory), ``wordfreq`` lacks
            the language, or a compound has too few frequency-matched candidates.
        MissingPackageError: ``wordfreq`` is not installed (exit 5).
        OutputError: ``out`` cannot be written (read-only file system, full disk, no
            permission, a file where a directory is needed; exit 6).
    """
    src, dest = Path(path), Path(out)
    scale = _check_options(src, dest, lang, k=k, head=head, overwrite=overwrite, scale=scale)
    sink = ErrorSink(collect=True)
    rows = read_rows(src, sink, FIX_PAIRS)
    run = _Generation(src, lang, k=k, seed=seed, band=band, head=head, ask=ask, scale=scale,
                      sink=sink, say=progress or (lambda line: None))
    for n, (i, raw) in enumerate(rows, start=1):
        run.say(f"compound {n} of {len(rows)}: {' '.join(str(raw.get('nc') or '?').split())}")
        run.add(i, raw)
    group_errors(sink)
    sink.raise_if_any()
    if not run.rows:
        raise DataError(f"no compounds to generate probes for; {FIX_INPUT}", file=str(src))
    _write_pairs(dest, run.rows, run.say)
    return GenerationReport(dest, run.ncs, run.counts, run.diffs, float(band), int(seed), k,
                            wordfreq_version())


def _check_options(src: Path, dest: Path, lang: str | None, *, k, head: str | None,
                   overwrite: bool, scale) -> tuple[float, float]:
    """Refuse, before any row is read, options that cannot work; the checked ``scale``.

    Raises:
        UsageError: a bad ``head`` rule, ``k``, ``scale`` or output (not ``.csv``, existing
            without ``overwrite``, a directory, the input itself), or a language ``wordfreq``
            lacks.
        OutputError: ``dest`` cannot become a file (:func:`_check_out`).
        MissingPackageError: ``wordfreq`` is not installed.
    """
    if head is not None and head not in HEAD_RULES:
        raise UsageError(f"head must be one of {', '.join(HEAD_RULES)}, not {head!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise UsageError(f"k must be a whole number >= 0, not {k!r}")
    if dest.suffix.lower() != ".csv":
        raise UsageError(f"the output must be a .csv file, not {dest}")
    _check_out(dest)
    if (dest.exists() or dest.is_symlink()) and not overwrite:
        raise UsageError(f"{dest} exists; choose another --out, or pass --overwrite to "
                         "replace it")
    if os.path.realpath(dest) == os.path.realpath(src):
        raise UsageError("the output would replace the input; choose another --out")
    checked = check_scale(scale)
    require_wordfreq()
    if lang:
        check_lang(lang)
    return checked


@dataclass
class _Compound:
    """A row of the input, checked: the compound in its sentence."""

    lang: str
    nc: str
    context: str
    tokens: tuple[str, ...]
    span: tuple[int, int]


@dataclass
class _Generation:
    """One run of :func:`generate_pairs`: its options, and what the rows added so far.

    :meth:`add` takes the input rows one at a time; a bad row goes to ``sink`` (with file,
    row and column) and adds nothing.
    """

    src: Path
    lang: str | None
    k: int
    seed: int
    band: float
    head: str | None
    ask: Callable[[str, tuple[str, ...]], str] | None
    scale: tuple[float, float]
    sink: ErrorSink
    say: Callable[[str], None]
    #: the rows of the pairs file, in the order written
    rows: list[dict[str, str]] = field(default_factory=list)
    #: rows written per probe family
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SUBSTITUTIONS, 0))
    #: ``|Zipf difference|`` of every drawn random word
    diffs: list[float] = field(default_factory=list)
    #: the compounds, ``(lang, nc)``, in input order
    ncs: list[tuple[str, str]] = field(default_factory=list)
    #: the languages whose candidate words were scored
    scored: set[str] = field(default_factory=set)
    #: ``(lang, nc)`` -> the head ``ask`` answered
    asked: dict[tuple[str, str], str] = field(default_factory=dict)
    #: ``(lang, nc, context)`` -> its row
    seen: dict[tuple[str, str, str], int] = field(default_factory=dict)
    #: ``(lang, nc, case-folded words)`` -> the row and context of that sentence
    sentences: dict[tuple[str, str, tuple[str, ...]], tuple[int, str]] = field(
        default_factory=dict)

    def add(self, number: int, raw: dict) -> None:
        """The probes of one input row, added to :attr:`rows` (nothing after an error)."""
        row = parse_row(number, raw, self.sink, str(self.src), text_columns=INPUT_TEXT,
                        required=("nc", "sentence"))
        if row is None:
            return
        c = self._compound(row)
        if c is None:
            return
        info = nc_info(c.lang, c.nc, row.text, raw, self.sink, row.where, self.scale,
                       SCALE_HINT)
        parts = _head_mod(c.nc, row.text, self.head, self.ask, self.asked, c.lang, self.sink,
                          row.where)
        if parts is None:
            return
        generated = self._probes(row, c, parts)
        if generated is None:
            return
        if (c.lang, c.nc) not in self.ncs:
            self.ncs.append((c.lang, c.nc))
        self._add_rows(c, raw.get("comp", "") if info is not None else "",
                       (row.text.get("class") or "").strip(), generated)

    def _compound(self, row: Row) -> _Compound | None:
        """The row's compound, language, context and sentence, each checked (a context given
        twice, or the same sentence twice for one compound, is an error); ``None`` after
        reporting."""
        r, where, sink = row.text, row.where, self.sink
        nc, tokens = " ".join(r["nc"].split()), tuple(r["sentence"].split())
        lang = (r.get("lang") or self.lang or "").strip()
        if not lang:
            sink.error("no language: give a lang column or the lang argument (--lang)",
                       column="lang", **where)
            return None
        context = row_context(r, sink, where)
        if context is None:
            return None
        first = self.seen.get((lang, nc, context))
        if first is not None:
            sink.error(f"{nc!r} already has a sentence in context {context} (row {first}); "
                       "give each sentence of one compound its own context (S1, S2, S3)",
                       column="context", **where)
            return None
        self.seen[(lang, nc, context)] = row.number
        # the same sentence (words compared case-insensitively) in two contexts of one
        # compound would weigh twice in its naturalistic mean
        folded = (lang, nc, tuple(t.casefold() for t in tokens))
        again = self.sentences.get(folded)
        if again is not None:
            sink.error(f"the sentence of {nc!r} repeats that of row {again[0]} (context "
                       f"{again[1]}): it would count twice; give another sentence or remove "
                       "the row", column="sentence", **where)
            return None
        self.sentences[folded] = (row.number, context)
        span = _compound_span(row, nc, tokens, sink)
        return None if span is None else _Compound(lang, nc, context, tokens, span)

    def _probes(self, row: Row, c: _Compound, parts: tuple[str, str]
                ) -> list[tuple[GeneratedProbe, RandomPhrase | None, str]] | None:
        """The row's probes with their ``origin``: P_Comp and P_Rand generated, P_Syn and
        P_WordsSyn given; ``None`` after reporting a compound the generators refuse."""
        orig = Stimulus(c.lang, c.nc, c.context, "original", 1, c.tokens, c.span,
                        " ".join(c.tokens[c.span[0]:c.span[1]]), f"{self.src}:{row.number}")
        # words of the compound in neither head nor modifier (de in pomme de terre) stay;
        # a hyphenated word counts as its parts (eau-forte: drawn)
        parts_words = {w for part in parts for w in _units(part)}
        linking = [j for j, w in enumerate(orig.tokens[c.span[0]:c.span[1]])
                   if not parts_words.intersection(_units(w))]
        if self.k and c.lang not in self.scored:
            self.scored.add(c.lang)
            self.say(f"scoring the {CANDIDATES:,} most frequent words of {c.lang!r} (wordfreq; "
                     "once per language, a few seconds)")
        try:
            generated: list[tuple[GeneratedProbe, RandomPhrase | None, str]] = [
                (p, None, "generated") for p in comp_probes(c.tokens, c.span, *parts)]
            generated += [(GeneratedProbe("rand", s.variant, s.tokens, s.span, s.target, ph),
                           ph, "generated") for s, ph in (
                               rand_stimuli([orig], k=self.k, seed=self.seed, band=self.band,
                                            keep={(c.lang, c.nc, c.context): linking})
                               if self.k else [])]
        except UsageError as e:
            self.sink.error(str(e), **row.where)
            return None
        for probe in ("syn", "wordssyn"):
            cell = row.text.get(probe, "")
            generated += [(p, None, "given") for p in syn_probes(
                c.tokens, c.span, cell.split(SYNONYM_SEP), probe=probe)]
        return generated

    def _add_rows(self, c: _Compound, comp, cls: str,
                  generated: list[tuple[GeneratedProbe, RandomPhrase | None, str]]) -> None:
        """The rows of one compound's sentence: its original, then its probes."""
        common = dict(lang=c.lang, nc=c.nc, context=c.context, sentence=" ".join(c.tokens),
                      start=str(c.span[0]), end=str(c.span[1]), comp=str(comp),
                      **{"class": cls})
        self.rows.append(dict(common, probe="original", variant="1",
                              substitute=" ".join(c.tokens[c.span[0]:c.span[1]]),
                              origin="given"))
        self.counts["original"] += 1
        for p, ph, origin in generated:
            row = dict(common, probe=p.probe, variant=str(p.variant), substitute=p.substitute,
                       origin=origin)
            if ph is not None:
                row.update(zipf=_nums(ph.zipf), source_zipf=_nums(ph.source_zipf),
                           zipf_diff=_nums(ph.diff), max_abs_zipf_diff=f"{ph.max_abs_diff:.2f}",
                           wordfreq=ph.wordfreq_version)
                self.diffs += [abs(d) for d in ph.drawn_diff]
            self.rows.append(row)
            self.counts[p.probe] += 1


def _compound_span(row: Row, nc: str, tokens: tuple[str, ...], sink: ErrorSink
                   ) -> tuple[int, int] | None:
    """The compound's span: the one the row gives (it must hold exactly the compound's
    words), else where its words occur, which must be exactly once; ``None`` after
    reporting."""
    raw, where = row.raw, row.where
    if given(raw, "span") or given(raw, "start") or given(raw, "end"):
        span = row_span(raw, sink, where)
        if span is None:
            return None
        column = "span" if given(raw, "span") else "start"
        if not 0 <= span[0] < span[1] <= len(tokens):
            sink.error(f"span [{span[0]}, {span[1]}) is empty or outside the sentence of "
                       f"{len(tokens)} words", column=column, **where)
            return None
        wrong = span_error(tokens, span, nc, exact=True)
        if wrong is not None:
            sink.error(wrong, column=column, **where)
            return None
        return span
    found = find_words(tokens, nc.split())
    if len(found) != 1:
        sink.error(f"the words of {nc!r} occur {len(found)} times in the sentence; "
                   "give the span (start, end: 0-based word positions, end "
                   "exclusive)", column="sentence", **where)
        return None
    return found[0]


def _write_pairs(dest: Path, rows: list[dict[str, str]], say: Callable[[str], None]) -> None:
    """Write the pairs file atomically (columns :data:`PAIRS_COLUMNS`).

    Raises:
        OutputError: it cannot be written (exit 6).
    """
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=PAIRS_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    say(f"writing {dest}")
    try:
        atomic_write_text(dest, buf.getvalue())
    except OSError as e:
        if e.errno not in UNWRITABLE_ERRNOS:
            raise
        raise output_error(e, dest, what="pairs file") from None


def _check_out(dest: Path) -> None:
    """Refuse, before any work, an output path that cannot become the pairs file.

    A directory is a usage error (exit 2); a symbolic-link loop at the path or in a folder
    of it, a dangling link or a file where a folder is needed (``notes.txt/pairs.csv``) is an
    :class:`~ncprobe.errors.OutputError` (exit 6).
    """
    def fail(code: int, cause: str | None = None) -> OutputError:
        return output_error(OSError(code, cause or os.strerror(code)), dest, what="pairs file")

    try:
        if stat.S_ISDIR(dest.stat().st_mode):
            raise UsageError(f"{dest} is a directory; name the pairs file to write (.csv), "
                             f"e.g. {dest / 'pairs.csv'}")
    except FileNotFoundError:
        pass  # a new file (or a dangling link, replaced as a file is: --overwrite)
    except OSError as e:  # a link loop, a file where a folder is needed, no permission
        raise output_error(e, dest, what="pairs file") from None
    for parent in dest.parents:
        try:
            mode = parent.stat().st_mode
        except FileNotFoundError:
            if parent.is_symlink():
                raise fail(errno.ENOENT, f"{parent} is a symbolic link to nothing") from None
            continue  # created when the file is written
        except OSError as e:
            raise output_error(e, dest, what="pairs file") from None
        if not stat.S_ISDIR(mode):
            raise fail(errno.ENOTDIR)
        return


def _units(text: str) -> list[str]:
    """The words of a compound or of a part of it, as the head and modifier check compares
    them: split on whitespace and on hyphens (``eau-forte`` is ``eau``, ``forte``),
    case-folded."""
    return [w.casefold() for w in re.split(r"[\s-]+", text) if w]


def _parts(nc: str) -> tuple[str, ...]:
    """The two parts of a compound: its words, or the halves of one hyphenated word."""
    words = tuple(nc.split())
    if len(words) == 1 and words[0].count("-") == 1:
        return tuple(words[0].split("-"))
    return words


def _head_mod(nc: str, r: dict, rule: str | None, ask, asked: dict, lang: str,
              sink: ErrorSink, where: dict) -> tuple[str, str] | None:
    """(head, modifier) of a row: its columns, else the head rule, else ``ask``."""
    head, mod = (" ".join((r.get(c) or "").split()) for c in ("head", "modifier"))
    if head and mod:
        return _given_head_mod(nc, head, mod, sink, where)
    if head or mod:
        sink.error("give both head and modifier, or neither (then --head first|last)",
                   column="modifier" if head else "head", **where)
        return None
    parts = _parts(nc)
    if rule is None and ask is None:
        sink.error("no head and modifier: add the columns head and modifier, or pass --head "
                   "last (head-final languages: English, German) or --head first "
                   "(head-initial: Portuguese, Spanish, French)", column="head", **where)
        return None
    if len(parts) != 2:
        sink.error(f"{nc!r} has {len(parts)} part(s), not two, so its head cannot be "
                   "inferred; give the head and modifier columns for it", column="head",
                   **where)
        return None
    if rule is not None:
        h = 0 if rule == "first" else 1
        return parts[h], parts[1 - h]
    if (lang, nc) not in asked:
        answer = " ".join(str(ask(nc, parts)).split())
        if answer not in parts:
            raise UsageError(f"the head of {nc!r} must be one of {', '.join(parts)}, not "
                             f"{answer!r}")
        asked[(lang, nc)] = answer
    h = parts.index(asked[(lang, nc)])
    return parts[h], parts[1 - h]


def _given_head_mod(nc: str, head: str, mod: str, sink: ErrorSink, where: dict
                    ) -> tuple[str, str] | None:
    """The head and modifier a row gives, checked: each whole words of the compound, and
    different words of it; ``None`` after reporting."""
    words = _units(nc)
    found = {}
    for part, column in ((head, "head"), (mod, "modifier")):
        found[column] = find_words(words, _units(part))
        if not found[column]:
            sink.error(f"{column} {part!r} is not a whole word (or words) of the compound "
                       f"{nc!r}, whose words are {', '.join(words)}; correct the {column} "
                       "column", column=column, **where)
            return None
    if not any(h_end <= m_start or m_end <= h_start for h_start, h_end in found["head"]
               for m_start, m_end in found["modifier"]):
        sink.error(f"head {head!r} and modifier {mod!r} are the same word(s) of the compound "
                   f"{nc!r}; give its head and its modifier", column="modifier", **where)
        return None
    return head, mod


def _nums(values: Iterable[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values)


