"""The official NCIMP files: neutral and naturalistic sentences with their probes.

Every span comes from its own column's ``_tag`` and is checked against the
sentence; where the file also holds the bare phrase (``compound noun``,
``only mwe synonym``...), the span text must equal it. Columns are named in
:mod:`.layout`.
"""

from __future__ import annotations

from ...errors import ErrorSink
from ..reading import RESTORE, LoadContext
from ..stimuli import NEUTRAL, Stimulus
from .anomalies import nc_parts, semantic_comp
from .layout import (
    NAT_COLUMNS,
    NAT_FILE,
    NAT_KEY_COLUMNS,
    NEUTRAL_FILE,
    NEUTRAL_KEY_COLUMNS,
    pick,
    wordssyn_alternatives,
)


def words(text: str) -> str:
    """The text with runs of white space folded to one space and no space at either end."""
    return " ".join(text.split())


def listed(names, limit: int = 12) -> str:
    """The first ``limit`` names, comma-separated, then how many more there are."""
    names = list(names)
    more = f" ... and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


class NeutralFile:
    """The neutral file of one language: stimuli, and the semantic head of each NC.

    Attributes:
        rel: the file's path inside the data directory.
        df: the parsed table, or ``None`` when it cannot be used (already reported).
        keys: the NC keys, in file order.
        head_mod: NC -> (head, modifier), as the file gives them.
        head_pos: NC -> position (0 or 1) of the semantic head in the NC.
    """

    def __init__(self, lang: str, ctx: LoadContext) -> None:
        self.lang, self.ctx = lang, ctx
        self.rel = NEUTRAL_FILE.format(LANG=lang.upper())
        self.df = ctx.table(self.rel, columns=NEUTRAL_KEY_COLUMNS)
        self.keys: list[str] = []
        self.head_mod: dict[str, tuple[str, str]] = {}
        self.head_pos: dict[str, int] = {}
        self.records: list[dict[str, str]] = []
        if self.df is None:
            return
        self.keys = unique_keys(self.df, self.rel, ctx.sink)
        self.records = self.df.records()
        for i, r in enumerate(self.records, start=1):
            nc, head, mod = r["compound"], r["compound noun head"], r["compound noun modifier"]
            self.head_mod[nc] = (head, mod)
            parts = nc_parts(nc)
            if len(parts) != 2 or {head, mod} != set(parts):
                ctx.sink.error(f"head {head!r} and modifier {mod!r} are not the two words of "
                               f"{nc!r}", file=self.rel, row=i, column="compound noun head",
                               key=nc)
                continue
            self.head_pos[nc] = parts.index(head) if parts[0] != parts[1] else 1

    def stimuli(self, columns: dict, context: str, wordssyn: str,
                ctx: LoadContext | None = None) -> list[Stimulus]:
        """The stimuli of one pattern (``columns``: :data:`~.layout.NEUTRAL_COLUMNS` or
        :data:`~.layout.PLURAL_COLUMNS`), reporting to ``ctx`` (default: the file's own)."""
        if self.df is None:
            return []
        present = self.df.columns
        ctx = ctx or self.ctx
        cols = dict(columns)
        if wordssyn == "all" and context == NEUTRAL:
            for variant, c in wordssyn_alternatives(present).items():
                cols[("wordssyn", variant)] = (c, None, f"only {c}")
        out: list[Stimulus] = []
        for (probe, variant), (sent_spec, tag_col, phrase_spec) in cols.items():
            sent_col = pick(sent_spec, self.lang)
            tag_col = tag_col or f"{sent_col}_tag"
            phrase_col = pick(phrase_spec, self.lang)
            if not self._has(ctx, present, sent_col, tag_col, phrase_col):
                continue
            for i, r in enumerate(self.records, start=1):
                s = tagged(ctx, self.lang, r, i, self.rel, context, probe, variant,
                           sent_col, tag_col, phrase_col)
                if s is not None:
                    out.append(s)
        return out

    def _has(self, ctx: LoadContext, present: tuple[str, ...], *columns) -> bool:
        missing = [c for c in columns if c and c not in present]
        for c in missing:
            ctx.sink.error("missing column", file=self.rel, column=c)
        return not missing


def unique_keys(df, rel: str, sink: ErrorSink) -> list[str]:
    """The NC keys (column ``compound``) of a file; an empty or repeated key is an error."""
    first: dict[str, int] = {}
    for i, nc in enumerate(df.column("compound"), start=1):
        if not nc.strip():
            sink.error("empty NC key", file=rel, row=i, column="compound")
        elif nc in first:
            sink.error(f"duplicate NC (first at row {first[nc]}); each NC must appear once",
                       file=rel, row=i, column="compound", key=nc)
        else:
            first[nc] = i
    return list(first)


def same_ncs(neutral: NeutralFile, what: str, rel: str, keys: list[str],
             ctx: LoadContext) -> None:
    """The NCs of one naturalistic context must be those of the neutral file (SCHEMA 6)."""
    have = set(keys)
    master = set(neutral.keys)
    lacking = [k for k in neutral.keys if k not in have]
    extra = [k for k in dict.fromkeys(keys) if k not in master]
    if lacking:
        ctx.sink.error(f"{what} lacks {len(lacking)} of the {len(master)} NCs of "
                       f"{neutral.rel} (the file is cut short, or rows were removed): "
                       f"{listed(lacking)}; {RESTORE}", file=rel)
    if extra:
        ctx.sink.error(f"{what} has {len(extra)} NC(s) that {neutral.rel} lacks: "
                       f"{listed(extra)}; {RESTORE}", file=rel)


def tagged(ctx: LoadContext, lang: str, r: dict, row: int, rel: str, context: str, probe: str,
           variant: int, sent_col: str, tag_col: str, phrase_col: str | None
           ) -> Stimulus | None:
    """One stimulus from a sentence column and its tag; the span must hold ``r[phrase_col]``."""
    nc = r["compound"]
    span = ctx.tag_span(r[sent_col], r[tag_col], file=rel, row=row, column=tag_col, key=nc)
    if span is None:
        return None
    tokens = tuple(r[sent_col].split())
    if r[sent_col] != " ".join(tokens):
        ctx.tolerate(f"{lang}: sentence cells with leading, trailing or double spaces "
                     "(normalised: words are whitespace tokens)")
    held = " ".join(tokens[span[0]:span[1]])
    phrase = words(r[phrase_col]) if phrase_col else held
    if phrase != held:
        if phrase.lower() != held.lower():
            ctx.sink.error(f"the span holds {held!r} but column {phrase_col!r} says {phrase!r}",
                           file=rel, row=row, column=tag_col, key=nc)
            return None
        ctx.tolerate(f"{lang}: span text differs from {phrase_col!r} only in letter case "
                     "(capitalised at sentence start)")
    return Stimulus(lang, nc, context, probe, variant, tokens, span, held,
                    f"{rel}:{row}:{sent_col}")


def naturalistic(lang: str, context: str, wordssyn: str, neutral: NeutralFile,
                 ctx: LoadContext, nat_keys: dict) -> list[Stimulus]:
    """The stimuli of one official naturalistic file (context ``S1``, ``S2`` or ``S3``).

    The NC keys read are recorded in ``nat_keys[(context, file)]``, for the check that
    every context holds the neutral file's NCs.
    """
    rel = NAT_FILE.format(LANG=lang.upper(), k=context[1])
    df = ctx.table(rel, columns=[*NAT_KEY_COLUMNS, *NAT_COLUMNS.values()])
    if df is None:
        return []
    nat_keys[(context, rel)] = unique_keys(df, rel, ctx.sink)
    cols = dict(NAT_COLUMNS)
    if wordssyn == "all":
        for variant, c in wordssyn_alternatives(df.columns).items():
            cols[("wordssyn", variant)] = c
    out: list[Stimulus] = []
    swaps = []
    for i, r in enumerate(df.records(), start=1):
        orig = tagged(ctx, lang, r, i, rel, context, "original", 1, "original sentence",
                      "original sentence_tag", "compound noun")
        if orig is None:
            continue
        row: dict[str | tuple[str, int], Stimulus] = {"original": orig}
        for (probe, variant), col in cols.items():
            s = tagged(ctx, lang, r, i, rel, context, probe, variant, col, f"{col}_tag", None)
            if s is not None:
                row[probe if probe in ("comp-head", "comp-mod") else (probe, variant)] = s
        row, relabelled = semantic_comp(row, orig.target, neutral.head_pos.get(r["compound"]))
        if relabelled:
            swaps.append(r["compound"])
        out.extend(row.values())
    if swaps:
        ctx.notes.append(f"{lang} {context}: head/modifier-only probes swapped to the semantic "
                         f"head for {len(swaps)} NCs (first word an adjective or numeral): "
                         + ", ".join(swaps))
    return out
