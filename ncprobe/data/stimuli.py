"""Stimulus and Stimuli: one sentence with one target span, and a collection of them.

A :class:`Stimulus` is everything an encoder and the measures need to know of
one sentence: the language, the noun compound it belongs to (always the
canonical ``compound`` key, never the surface form), the context (S1, S2, S3
naturalistic; N neutral singular; Npl neutral plural), the probe family and
variant, the pre-tokenised sentence and the word span ``[start, end)`` of the
target expression (the NC in an original, the substitute in a probe).
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence

from ..errors import DataError

# the vocabularies of the stimuli; LANGS, NATURALISTIC, NEUTRAL ... stay importable from here
from ..schema import (
    CLASSES,
    CONTEXT_ALIASES,
    CONTEXTS,
    LANGS,
    NATURALISTIC,
    NEUTRAL,
    NEUTRAL_PLURAL,
    SUBSTITUTION_ALIASES,
    SUBSTITUTIONS,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

def expand_contexts(contexts: str | Iterable[str]) -> tuple[str, ...]:
    """Expand ``nat``/``neut``/``neut-pl``/``all`` and comma lists to context ids.

    >>> expand_contexts("nat,neut")
    ('S1', 'S2', 'S3', 'N')
    """
    return _expand(contexts, CONTEXTS, CONTEXT_ALIASES, "context")


def expand_probes(probes: str | Iterable[str]) -> tuple[str, ...]:
    """Expand ``comp``/``all`` and comma lists to probe families; ``original`` is always kept.

    >>> expand_probes("syn,comp")
    ('original', 'syn', 'comp-head', 'comp-mod')
    """
    got = _expand(probes, SUBSTITUTIONS, SUBSTITUTION_ALIASES, "probe")
    return tuple(p for p in SUBSTITUTIONS if p == "original" or p in got)


def _expand(value, allowed, aliases, what) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    out: list[str] = []
    for raw in items:
        item = raw.strip()
        key = item.lower()
        if key in aliases:
            out.extend(aliases[key])
            continue
        match = [a for a in allowed if a.lower() == key]
        if not match:
            raise ValueError(f"unknown {what} {item!r}; choose from "
                             f"{', '.join(allowed + tuple(aliases))}")
        out.append(match[0])
    ordered = tuple(a for a in allowed if a in out)
    return ordered


def _check_known(what: str, given, valid: Sequence[str], aliases: dict | None = None) -> None:
    """Raise ValueError for each value of ``given`` not in ``valid``, listing the valid ones."""
    if not given:
        return
    bad = sorted((v for v in given if v not in valid), key=str)
    if not bad:
        return
    hints = []
    for v in bad:
        if isinstance(v, str) and aliases and v.lower() in aliases:
            hints.append(f"{v!r} stands for {', '.join(aliases[v.lower()])}: pass those")
        else:
            close = difflib.get_close_matches(str(v), [str(x) for x in valid], n=3)
            if close:
                hints.append(f"{v!r}: did you mean {' or '.join(map(repr, close))}?")
    shown = ", ".join(map(str, valid[:20])) + (f" ... ({len(valid)} in all)"
                                               if len(valid) > 20 else "")
    raise ValueError(f"unknown {what} {', '.join(map(repr, bad))}; valid: {shown or 'none'}"
                     + ("".join(f"; {h}" for h in hints)))


@dataclass(frozen=True, slots=True)
class Stimulus:
    """One sentence with one target span.

    Attributes:
        lang: ``en`` or ``pt`` (or the language of a user's own pairs).
        nc: canonical NC key (``compound`` of the NCIMP files).
        context: ``S1``, ``S2``, ``S3``, ``N`` or ``Npl``.
        probe: one of :data:`~ncprobe.schema.SUBSTITUTIONS`.
        variant: 1-based variant number within the probe family.
        tokens: the pre-tokenised sentence (words are whitespace tokens).
        span: word span ``(start, end)``, end exclusive.
        target: the text the span holds: the NC as written in the sentence
            (original) or the substitute phrase (probe).
        source: provenance, ``file:row:column``.
        spliced: True when the sentence was built by splicing a phrase into
            the original (not an official probe sentence).
    """

    lang: str
    nc: str
    context: str
    probe: str
    variant: int
    tokens: tuple[str, ...]
    span: tuple[int, int]
    target: str
    source: str = ""
    spliced: bool = False

    def __post_init__(self) -> None:
        start, end = self.span
        if not (0 <= start < end <= len(self.tokens)):
            raise DataError(f"span {list(self.span)} is empty or outside the sentence of "
                            f"{len(self.tokens)} words", file=self.source or None, key=self.nc)
        if " ".join(self.tokens[start:end]) != self.target:
            raise DataError(f"span {list(self.span)} holds {self.span_text!r}, expected "
                            f"{self.target!r}", file=self.source or None, key=self.nc)

    @property
    def text(self) -> str:
        """The sentence, words joined by single spaces."""
        return " ".join(self.tokens)

    @property
    def span_text(self) -> str:
        return " ".join(self.tokens[self.span[0]:self.span[1]])

    @property
    def char_span(self) -> tuple[int, int]:
        """Character offsets ``[start, end)`` of the span in :attr:`text`."""
        start, end = self.span
        cstart = sum(len(t) + 1 for t in self.tokens[:start])
        cend = cstart + sum(len(t) for t in self.tokens[start:end]) + (end - start - 1)
        return cstart, cend


@dataclass(frozen=True, slots=True)
class NounCompound:
    """One NC with its gold scores.

    Attributes:
        comp: gold compositionality, Eq. 1: mean over S1-S3 of the per-sentence
            annotator means (NaN when the NC has no token-level scores).
        comp_type: type-level score (NaN when unknown).
        token_scores: per-sentence annotator means for S1, S2, S3.
        cls: ``I``, ``PC`` or ``C`` (NCTTI ``CompScale``), or ``None``.
        gold: the score selected as gold (``comp`` or ``comp_type``).
        head, modifier: the semantic head and modifier (lemmas).
    """

    lang: str
    nc: str
    comp: float = math.nan
    comp_type: float = math.nan
    token_scores: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    cls: str | None = None
    gold: float = math.nan
    head: str = ""
    modifier: str = ""

    @property
    def scored(self) -> bool:
        return not math.isnan(self.gold)


@dataclass
class Stimuli(Sequence[Stimulus]):
    """A typed, ordered collection of stimuli with the NCs they belong to.

    Attributes:
        items: the stimuli.
        ncs: NC key -> :class:`NounCompound`, per language (``{(lang, nc): ...}``).
        notes: what the loader tolerated or corrected, one line each, with counts.
        sources: data file -> git blob id of the copy that was read.
        modified: data file -> ``{"blob": found, "pinned": pinned}`` for each file read
            although its git blob id differs from its pin (``accept_modified=True``).
        gold_exempt: for each language whose loader vouches for its gold scores (the NCIMP
            files), the NCs that have no gold score by design (English ``dust storm``);
            every other NC of such a language must have one (see
            :func:`ncprobe.data.coverage.check_coverage`). Languages absent here (a
            user's own pairs) need a gold score for every NC or for none.
    """

    items: tuple[Stimulus, ...]
    ncs: dict[tuple[str, str], NounCompound] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    modified: dict[str, dict] = field(default_factory=dict)
    gold_exempt: dict[str, frozenset[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.with_items(self.items[i])
        return self.items[i]

    def __iter__(self) -> Iterator[Stimulus]:
        return iter(self.items)

    def __repr__(self) -> str:
        langs = sorted({s.lang for s in self.items})
        return (f"Stimuli({len(self.items)} stimuli, {len(self.ncs)} NCs, langs={langs}, "
                f"contexts={sorted({s.context for s in self.items})})")

    def with_items(self, items: Iterable[Stimulus]) -> "Stimuli":
        """The same NCs, notes and sources with other stimuli (``items``)."""
        return Stimuli(tuple(items), dict(self.ncs), list(self.notes), dict(self.sources),
                       dict(self.modified), dict(self.gold_exempt))

    def __add__(self, other: "Stimuli") -> "Stimuli":
        return Stimuli(self.items + other.items, {**self.ncs, **other.ncs},
                       self.notes + other.notes, {**self.sources, **other.sources},
                       {**self.modified, **other.modified},
                       {**self.gold_exempt, **other.gold_exempt})

    def filter(self, *, lang: str | Iterable[str] | None = None,
               context: str | Iterable[str] | None = None,
               probe: str | Iterable[str] | None = None, nc: str | Iterable[str] | None = None
               ) -> "Stimuli":
        """The stimuli matching every given criterion (a value or a collection of values).

        Values are matched exactly: context ids (``S1``, ``S2``, ``S3``, ``N``, ``Npl``),
        probe families (:data:`~ncprobe.schema.SUBSTITUTIONS`), language codes and NC
        keys, never the aliases of :func:`expand_contexts`
        (``filter(context=expand_contexts("nat"))`` for those).
        A value that can match nothing, because it is not a context id, probe family,
        language or NC of this collection, raises: a typo never gives an empty selection.

        Raises:
            ValueError: naming each unknown value and the valid ones.
        """
        def as_set(v):
            return None if v is None else ({v} if isinstance(v, str) else set(v))
        langs, ctxs, probes, ncs = map(as_set, (lang, context, probe, nc))
        present_langs = {s.lang for s in self.items} | {lg for lg, _ in self.ncs}
        _check_known("lang", langs, tuple(LANGS) + tuple(sorted(present_langs - set(LANGS))))
        _check_known("context", ctxs, CONTEXTS, CONTEXT_ALIASES)
        _check_known("probe", probes, SUBSTITUTIONS, SUBSTITUTION_ALIASES)
        _check_known("nc", ncs, tuple(sorted({s.nc for s in self.items}
                                            | {n for _, n in self.ncs})))
        return self.with_items(s for s in self.items
                          if (langs is None or s.lang in langs)
                          and (ctxs is None or s.context in ctxs)
                          and (probes is None or s.probe in probes)
                          and (ncs is None or s.nc in ncs))

    def contexts(self) -> list[tuple[str, str, str]]:
        """Distinct ``(lang, nc, context)`` triples, in order of first appearance."""
        return list(dict.fromkeys((s.lang, s.nc, s.context) for s in self.items))

    def originals(self) -> "Stimuli":
        return self.filter(probe="original")

    def to_frame(self) -> "pd.DataFrame":
        """One row per stimulus, with the NC's gold scores and class joined on."""
        import pandas as pd

        names = [f.name for f in fields(Stimulus)]
        rows = []
        for s in self.items:
            row = {n: getattr(s, n) for n in names}
            row["sentence"] = s.text
            row["start"], row["end"] = s.span
            row["char_start"], row["char_end"] = s.char_span
            info = self.ncs.get((s.lang, s.nc))
            row["comp"] = info.comp if info else math.nan
            row["comp_type"] = info.comp_type if info else math.nan
            row["gold"] = info.gold if info else math.nan
            row["cls"] = info.cls if info else None
            rows.append(row)
        cols = ["lang", "nc", "cls", "comp", "comp_type", "gold", "context", "probe", "variant",
                "sentence", "start", "end", "char_start", "char_end", "target", "tokens", "span",
                "spliced", "source"]
        df = pd.DataFrame(rows, columns=cols)
        for c in ("lang", "context", "probe", "cls"):
            df[c] = df[c].astype("category")
        return df

    def ncs_frame(self) -> "pd.DataFrame":
        """One row per NC: language, key, gold scores, class, head, modifier."""
        import pandas as pd

        rows = [{"lang": n.lang, "nc": n.nc, "cls": n.cls, "comp": n.comp,
                 "comp_type": n.comp_type, "gold": n.gold, "s1": n.token_scores[0],
                 "s2": n.token_scores[1], "s3": n.token_scores[2], "head": n.head,
                 "modifier": n.modifier} for n in self.ncs.values()]
        return pd.DataFrame(rows)

    def describe(self) -> dict:
        """Counts per language, as printed by ``ncprobe data info``.

        For each language: NCs, NCs with a gold score (and those without),
        class sizes and class means of the gold score, naturalistic and neutral
        contexts, the min and max number of stimuli per context for each probe
        family (comp-head and comp-mod counted together as ``comp``), the mean
        naturalistic sentence length in words, and the number of stimuli.
        """
        out: dict = {}
        for lang in sorted({k[0] for k in self.ncs} | {s.lang for s in self.items}):
            ncs = [n for (lg, _), n in self.ncs.items() if lg == lang]
            items = [s for s in self.items if s.lang == lang]
            origs = [s for s in items if s.probe == "original"]
            per_ctx: dict[str, Counter] = {}
            for s in items:
                if s.probe != "original":
                    fam = "comp" if s.probe.startswith("comp") else s.probe
                    per_ctx.setdefault(fam, Counter())[(s.nc, s.context)] += 1
            n_ctx = len({(s.nc, s.context) for s in origs})
            classes = {c: [n.gold for n in ncs if n.cls == c and n.scored] for c in CLASSES}
            nat = [len(s.tokens) for s in origs if s.context in NATURALISTIC]
            out[lang] = {
                "ncs": len(ncs),
                "scored": sum(n.scored for n in ncs),
                "unscored": sorted(n.nc for n in ncs if not n.scored),
                "classes": {c: len(v) for c, v in classes.items()},
                "class_mean_gold": {c: round(sum(v) / len(v), 4) if v else None
                                    for c, v in classes.items()},
                "contexts": {"naturalistic": sum(s.context in NATURALISTIC for s in origs),
                             "neutral": sum(s.context == NEUTRAL for s in origs),
                             "neutral_plural": sum(s.context == NEUTRAL_PLURAL for s in origs)},
                "stimuli_per_context": {
                    fam: [min(c.values()) if len(c) == n_ctx else 0, max(c.values())]
                    for fam, c in per_ctx.items()},
                "mean_naturalistic_length": round(sum(nat) / len(nat), 2) if nat else None,
                "spliced_stimuli": sum(s.spliced for s in items),
                "stimuli": len(items),
            }
        return out
