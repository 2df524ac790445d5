"""SemanticQA's noun-compound compositionality task (NCC): the ``ncc`` probe's data.

SemanticQA (Liu et al., ACL 2026; ``jacklanda/SemanticQA``, MIT) asks language models, in
multiple choice, how compositional a noun compound is in one sentence. Its published results
are JSON Lines files, one per system and setting, in :data:`RESULTS_DIR` of the data directory
(``noun_compound_compositionality_<setting>_<model>.json``), and its prompts are
:data:`PROMPT_FILES`; every one is pinned in ``ncprobe/data/upstream.tsv`` (need ``extra``) and
verified against its pin before it is read.

:func:`load_ncc` reads them into :class:`NccData`: the items (:class:`NccItem`), each file's
answers (:class:`PublishedSystem`) and the prompts. Every line is checked (valid JSON, the keys
of :data:`KEYS` with their types, options that are the four texts of :data:`OPTION_CLASSES`, a
gold letter that names a class), every item is the same in every file (field by field), ids
are unique within a file, each compound is one item, an English NCIMP compound, located in its
sentence (:func:`compound_span`), and its gold class is NCTTI's ``CompScale`` for it: each
problem is a :class:`~ncprobe.errors.DataError` naming the file, the line, the item id and the
key.

:func:`ncc_stimuli` gives the stimuli NCIMP's measures are computed on, one sentence per
compound: NCIMP's own stimuli where the item's sentence is one of the compound's NCIMP
naturalistic sentences (:func:`same_sentence`), else the compound's NCIMP probe phrases
spliced into the item's sentence.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import DataErrors, ErrorSink
from .ncimp import SplicedStimuliWarning, load_stimuli, modified_note
from .reading import RESTORE, LoadContext
from .scores import _CLASS as _NCTTI_CLASS
from .sources import resolve_data_dir, upstream_files
from .splice import splice_phrase
from .stimuli import NATURALISTIC, NounCompound, Stimuli, Stimulus

#: The task's classes, from the least to the most compositional: Non-compositional, Partly
#: compositional, Compositional (the option texts of SemanticQA's NCC items).
NCC_CLASSES: tuple[str, ...] = ("NC", "PC", "C")

__all__ = ["KEYS", "LETTERS", "NCC_CLASSES", "OPTION_CLASSES", "PROMPT_FILES", "RESULTS_DIR",
           "UNANSWERED", "NccData", "NccItem", "PublishedSystem", "compound_span",
           "load_ncc", "ncc_counts", "ncc_stimuli", "pinned_systems", "prediction_files",
           "prediction_letter", "same_sentence"]

_ROOT = "jacklanda+SemanticQA/semantic_qa"
#: The folder of the prediction files, inside the data directory.
RESULTS_DIR = _ROOT + "/results/noun_compound_compositionality"
_PREFIX = "noun_compound_compositionality_"
#: The prompts, inside the data directory (``{{context}}`` and ``{{noun compound}}`` are their
#: placeholders; the few-shot prompt also has ``{{example}}``).
PROMPT_FILES: dict[str, str] = {
    kind: f"{_ROOT}/prompts/noun_compound_compositionality_{kind}.txt"
    for kind in ("zeroshot", "fewshot")}
_PLACEHOLDERS = ("{{context}}", "{{noun compound}}")
#: Option text -> class; the fourth option, "None of the above", is ``none``.
OPTION_CLASSES: dict[str, str] = {"Non-compositional": "NC", "Partly compositional": "PC",
                                  "Compositional": "C", "None of the above": "none"}
#: The option letters.
LETTERS: tuple[str, ...] = ("A", "B", "C", "D")
#: The answer of a prediction that holds no letter A-D.
UNANSWERED = "unanswered"
#: Every line's keys: those that define the item, then the system's ``prediction``.
KEYS: tuple[str, ...] = ("id", "noun_compound", "context", *LETTERS, "target", "prediction")
#: The keys an item must hold the same in every file (with its ``id``).
_ITEM_KEYS: tuple[str, ...] = ("noun_compound", "context", *LETTERS, "target")
#: What separates the sentence from the options in ``context``.
_OPTIONS_MARK = "\nOptions: "
#: NCIMP's class -> the task's class (NCTTI's ``CompScale``, whose ``NC`` NCIMP reads as ``I``).
_FROM_NCIMP = {ours: nctti for nctti, ours in _NCTTI_CLASS.items()}
_NAME = re.compile(r"^((?:multi_step_)?\d+-shot)_(.+)\.json$")
_MULTI_STEP = "multi_step_"


@dataclass(frozen=True)
class NccItem:
    """One NCC item: a compound in a sentence, four options, the gold class.

    Attributes:
        id: the item id, as in the files (``"046"``).
        nc: the compound's NCIMP key (the file's ``noun_compound``, matched
            case-insensitively), the ``nc`` of the stimuli and of the results.
        sentence: the sentence, as in the file (``context`` before ``"\\nOptions: "``):
            lower-cased and tokenised with spaces upstream.
        tokens: the sentence split on whitespace.
        span: ``(start, end)``, the compound's words in :attr:`tokens` (end exclusive), by
            :func:`compound_span`.
        gold: the class of the option at ``target``: ``NC``, ``PC`` or ``C``.
        options: letter -> the class of its option (``none`` for "None of the above").
        file: the file the item was read from first (the others hold the same item).
        line: its line in that file.
    """

    id: str
    nc: str
    sentence: str
    tokens: tuple[str, ...]
    span: tuple[int, int]
    gold: str
    options: dict[str, str] = field(hash=False)
    file: str = field(default="", compare=False)
    line: int = field(default=0, compare=False)

    @property
    def span_text(self) -> str:
        """The compound as the sentence has it (``love songs`` for ``love song``)."""
        return " ".join(self.tokens[self.span[0]:self.span[1]])

    def letter(self, cls: str) -> str:
        """The letter of the option of class ``cls`` (``NC``, ``PC``, ``C`` or ``none``)."""
        return next(k for k, v in self.options.items() if v == cls)


@dataclass(frozen=True)
class PublishedSystem:
    """One prediction file: a system's answers in one setting.

    Attributes:
        setting: the part of the file name before the model: ``0-shot``, ``3-shot``,
            ``5-shot``, ``multi_step_0-shot`` ...
        system: the model part of the file name (``gpt-5``, ``DeepSeek-R1-Instruct`` ...).
        file: the file, inside the data directory.
        answers: item id -> ``NC``, ``PC``, ``C``, ``none`` (the class of the option whose
            letter the prediction gives) or ``unanswered`` (no letter A-D), for the items
            the file holds (an item without a line is absent, not unanswered).
    """

    setting: str
    system: str
    file: str
    answers: dict[str, str] = field(hash=False)

    @property
    def label(self) -> str:
        """``<setting>_<system>``, as in the file name."""
        return f"{self.setting}_{self.system}"

    @property
    def unanswered(self) -> tuple[str, ...]:
        """The ids of the items whose prediction holds no letter A-D."""
        return tuple(k for k, v in self.answers.items() if v == UNANSWERED)


@dataclass(frozen=True)
class NccData:
    """SemanticQA NCC: the items, the published systems' answers, the prompts.

    Attributes:
        items: the items, in the order of the first prediction file.
        systems: one per prediction file, in the order of the pins.
        prompts: ``zeroshot`` and ``fewshot`` -> the prompt's text.
        notes: what was noticed and tolerated, one line each, with counts.
        sources: file -> git blob id of each file read (the NCIMP files of the checks too).
        modified: file -> ``{"blob": found, "pinned": pinned}`` of files used although they
            differ from their pin (``accept_modified=True``).
    """

    items: tuple[NccItem, ...]
    systems: tuple[PublishedSystem, ...]
    prompts: dict[str, str] = field(hash=False)
    notes: tuple[str, ...] = ()
    sources: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    modified: dict[str, dict] = field(default_factory=dict, hash=False, compare=False)

    def item(self, item_id: str) -> NccItem:
        """The item with this id (``KeyError`` if none)."""
        for it in self.items:
            if it.id == item_id:
                return it
        raise KeyError(item_id)

    def gold_counts(self) -> dict[str, int]:
        """Items per gold class, in the order of :data:`ncprobe.ncc.NCC_CLASSES`."""
        c = Counter(it.gold for it in self.items)
        return {k: c[k] for k in NCC_CLASSES}


def prediction_files() -> list[str]:
    """The pinned prediction files (paths inside the data directory), in the pins' order."""
    start = RESULTS_DIR + "/" + _PREFIX
    return [f.local_path for f in upstream_files()
            if f.local_path.startswith(start) and f.local_path.endswith(".json")]


def pinned_systems() -> list[str]:
    """The systems of the pinned prediction files, each once, in the pins' order: a file's
    model name without a trailing ``-Instruct`` (SemanticQA names DeepSeek-R1 and GPT-5's
    3- and 5-shot files ``DeepSeek-R1-Instruct``, ``gpt-5-Instruct``: the same systems, as
    the paper's Table 3 lists them; Kimi-K2 is ``Kimi-K2-Instruct`` in every file)."""
    names = (_setting_system(rel) for rel in prediction_files())
    return list(dict.fromkeys(name[1].removesuffix("-Instruct") for name in names if name))


def _setting_system(rel: str) -> tuple[str, str] | None:
    m = _NAME.match(rel.rsplit("/", 1)[-1][len(_PREFIX):])
    return (m.group(1), m.group(2)) if m else None


def prediction_letter(prediction: str) -> str | None:
    """The letter a prediction gives: its first non-space character, if it is A-D.

    >>> prediction_letter(" B: Partly compositional"), prediction_letter("Output Option: B")
    ('B', None)
    """
    text = prediction.lstrip()
    return text[0] if text and text[0] in LETTERS else None


def compound_span(tokens: tuple[str, ...] | list[str], nc: str) -> list[tuple[int, int]]:
    """Every span of ``tokens`` that holds the compound, first to last.

    The rule: a run of as many tokens as the compound has words, equal to its words once
    lower-cased, where the last (the head) may also be in a regular English plural
    (``+s``, ``+es``, ``y`` -> ``ies``): ``love songs`` for ``love song``, ``hen parties``
    for ``hen party``. The items' span is the first.

    >>> compound_span("the love songs and a love song".split(), "love song")
    [(1, 3), (5, 7)]
    """
    words = nc.lower().split()
    n = len(words)
    if not n:
        return []
    head = words[-1]
    forms = {head, head + "s", head + "es"}
    if len(head) > 1 and head.endswith("y"):
        forms.add(head[:-1] + "ies")
    low = [t.lower() for t in tokens]
    return [(i, i + n) for i in range(len(low) - n + 1)
            if low[i:i + n - 1] == words[:-1] and low[i + n - 1] in forms]


def same_sentence(item_sentence: str, ncimp_tokens: tuple[str, ...] | list[str]) -> bool:
    """Whether an item's sentence is an NCIMP sentence: the rule of :func:`ncc_stimuli`.

    Both lower-cased, NCIMP's tokens joined by single spaces, the item's whitespace runs
    made single spaces; equal strings match (no other normalisation).
    """
    return " ".join(item_sentence.lower().split()) == " ".join(ncimp_tokens).lower()


# --- loading ---------------------------------------------------------------------------------

def load_ncc(data_dir: str | Path | None = None, *, accept_modified: bool = False,
             collect: bool = False) -> NccData:
    """Load SemanticQA's NCC items, the published predictions and the prompts, verified.

    Args:
        data_dir: the data directory (default: ``$NCPROBE_DATA``, then the cache), the one
            ``ncprobe data download`` fills.
        accept_modified: use files whose git blob id differs from their pin (listed in
            ``NccData.modified`` and in a ``MODIFIED DATA`` note) instead of stopping.
        collect: report every problem at once (:class:`~ncprobe.errors.DataErrors`) instead
            of stopping at the first.

    Returns:
        :class:`NccData`.

    Raises:
        DataError: a file is missing, unreadable or differs from its pin; a line is not JSON,
            lacks a key or has one of the wrong type; an option is not one of the task's four;
            the gold letter names no class; an item differs between files (naming the file,
            the item and the field), repeats an id within a file or a compound of another
            item; its compound is not an English NCIMP compound, is not in its sentence, or
            its gold class differs from NCTTI's (naming the item, the compound and both
            classes). Also the NCIMP loader's errors (the compounds and classes come from it).

    Example:
        >>> data = load_ncc()                                    # doctest: +SKIP
        >>> len(data.items), data.gold_counts()                  # doctest: +SKIP
        (241, {'NC': 95, 'PC': 75, 'C': 71})
    """
    ctx = LoadContext(resolve_data_dir(data_dir), ErrorSink(collect=collect),
                      accept_modified=accept_modified)
    data = _load(ctx, prediction_files(), tuple(PROMPT_FILES))
    ctx.sink.raise_if_any()
    assert data is not None  # every problem was raised above
    return data


def ncc_counts(data_dir: str | Path | None = None) -> tuple[dict, list[str], list[str]]:
    """What the data directory holds of SemanticQA NCC (``ncprobe data info``).

    The files present are read as they are (modified ones included: their pins are reported
    elsewhere); none present gives ``({}, [], [])``.

    Returns:
        ``(counts, notes, problems)``, each problem a line; the counts are ``{"items",
        "classes": {class: n}, "systems" (prediction files), "models" (distinct model names),
        "ncimp_sentences", "spliced"}``.
    """
    ctx = LoadContext(resolve_data_dir(data_dir), ErrorSink(collect=True), accept_modified=True)
    files = [rel for rel in prediction_files() if ctx.exists(rel)]
    if not files:
        return {}, [], []
    data = _load(ctx, files, tuple(k for k, rel in PROMPT_FILES.items() if ctx.exists(rel)))
    if data is None or ctx.sink.errors:
        return {}, [], [str(e) for e in ctx.sink.errors]
    try:
        with warnings.catch_warnings():  # counting: what the warning says is not asked here
            warnings.simplefilter("ignore", SplicedStimuliWarning)
            stim, _, notes = ncc_stimuli(data, data_dir=ctx.data_dir, accept_modified=True,
                                         collect=True)
    except DataErrors as e:
        return {}, list(data.notes), [str(err) for err in e.errors]
    spliced = {s.nc for s in stim if s.spliced and s.source.startswith(RESULTS_DIR)}
    counts = {"items": len(data.items), "classes": data.gold_counts(),
              "systems": len(data.systems), "models": len({s.system for s in data.systems}),
              "ncimp_sentences": len(data.items) - len(spliced), "spliced": len(spliced)}
    return counts, [n for n in (*data.notes, *notes) if not n.startswith("MODIFIED DATA")], []


@dataclass
class _Row:
    """One line of a prediction file, checked for its keys and their types."""

    file: str
    line: int
    obj: dict


def _load(ctx: LoadContext, files: list[str], prompt_kinds: tuple[str, ...]) -> NccData | None:
    """Read and check the files; problems go to ``ctx.sink``. ``None`` when any was found."""
    before = len(ctx.sink.errors)
    notes: list[str] = []
    prompts = {kind: text for kind in prompt_kinds
               if (text := _prompt(ctx, PROMPT_FILES[kind])) is not None}
    first: dict[str, _Row] = {}  # item id -> the first line that holds it
    letters: dict[str, dict[str, str | None]] = {}  # file -> item id -> letter
    for rel in files:
        rows = _rows(ctx, rel, notes)
        if rows is None:
            continue
        letters[rel] = _file_letters(ctx, rel, rows, first)
    ncimp = _ncimp_classes(ctx)
    items = _items(ctx, first, ncimp, notes) if ncimp is not None else {}
    systems = []
    for rel, got in letters.items():
        named = _setting_system(rel)
        if named is None:
            ctx.sink.error("the file name is not noun_compound_compositionality_<setting>_"
                           "<model>.json (setting e.g. 0-shot, multi_step_3-shot)", file=rel)
            continue
        answers = {k: items[k].options[v] if v is not None else UNANSWERED
                   for k, v in got.items() if k in items}
        systems.append(PublishedSystem(named[0], named[1], rel, answers))
    if len(ctx.sink.errors) > before:
        return None
    notes += _system_notes(systems, len(items))
    for rel, m in ctx.modified.items():
        notes.insert(0, modified_note(rel, m))
    return NccData(tuple(items.values()), tuple(systems), prompts, tuple(notes),
                   dict(ctx.read), dict(ctx.modified))


def _prompt(ctx: LoadContext, rel: str) -> str | None:
    data = ctx.verified_bytes(rel)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        ctx.sink.error(f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                       + RESTORE, file=rel)
        return None
    missing = [p for p in _PLACEHOLDERS if p not in text]
    if missing:
        ctx.sink.error("the prompt lacks the placeholder(s) " + ", ".join(missing)
                       + "; " + RESTORE, file=rel)
        return None
    return text


def _rows(ctx: LoadContext, rel: str, notes: list[str]) -> list[_Row] | None:
    """The lines of one prediction file, each a JSON object with :data:`KEYS` of the right
    types (a line that is not is reported and left out)."""
    data = ctx.verified_bytes(rel)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        bad_line = data[:e.start].count(b"\n") + 1
        ctx.sink.error(f"not UTF-8 text: byte 0x{data[e.start]:02x} on line {bad_line}; "
                       + RESTORE, file=rel, row=bad_line)
        return None
    multi_step = rel.rsplit("/", 1)[-1][len(_PREFIX):].startswith(_MULTI_STEP)
    rows: list[_Row] = []
    before = len(ctx.sink.errors)
    # split on "\n" only: str.splitlines would also split inside a JSON string at U+2028
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line
        lines.pop()
    blank = 0
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            blank += 1
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            ctx.sink.error(f"not valid JSON ({e.msg} at column {e.colno}); " + RESTORE,
                           file=rel, row=i)
            continue
        if not isinstance(obj, dict):
            ctx.sink.error(f"the line is a JSON {type(obj).__name__}, not an object; "
                           + RESTORE, file=rel, row=i)
            continue
        rid = obj.get("id")
        where = dict(file=rel, row=i, key=rid if isinstance(rid, str) else None)
        ok = True
        for name in KEYS:
            value = obj.get(name)
            if name not in obj:
                ctx.sink.error(f"missing key {name!r}; " + RESTORE, column=name, **where)
                ok = False
            elif name == "prediction":
                if _prediction_text(value, multi_step) is None:
                    want = ("an object with a string 'category' (or a JSON string of one)"
                            if multi_step else "a string")
                    ctx.sink.error(f"'prediction' is {str(value)[:80]!r}, expected {want}; "
                                   + RESTORE, column=name, **where)
                    ok = False
            elif not isinstance(value, str):
                ctx.sink.error(f"{name!r} is {value!r}, expected a string; " + RESTORE,
                               column=name, **where)
                ok = False
        if ok:
            rows.append(_Row(rel, i, obj))
    if blank:
        notes.append(f"{rel}: {blank} blank line(s) skipped")
    if not rows and len(ctx.sink.errors) == before:
        ctx.sink.error("the file holds no item; " + RESTORE, file=rel)
    return rows


def _prediction_text(value: object, multi_step: bool) -> str | None:
    """The text whose first character is the letter: the prediction itself, or in a
    multi-step file the ``category`` of its object (given as an object or a JSON string of
    one). ``None``: the prediction does not have that layout."""
    if not multi_step:
        return value if isinstance(value, str) else None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if isinstance(value, dict) and isinstance(value.get("category"), str):
        return value["category"]
    return None


def _file_letters(ctx: LoadContext, rel: str, rows: list[_Row], first: dict[str, _Row]
                  ) -> dict[str, str | None]:
    """Item id -> predicted letter of one file; each line's item is compared with the same
    item's first line (of this or an earlier file) field by field."""
    multi_step = rel.rsplit("/", 1)[-1][len(_PREFIX):].startswith(_MULTI_STEP)
    out: dict[str, str | None] = {}
    line_of: dict[str, int] = {}
    for row in rows:
        rid = row.obj["id"]
        where = dict(file=rel, row=row.line, key=rid)
        if rid in line_of:
            ctx.sink.error(f"item id {rid!r} repeats line {line_of[rid]} of the same file; ids "
                           "must be unique within a file; " + RESTORE, column="id", **where)
            continue
        line_of[rid] = row.line
        ref = first.setdefault(rid, row)
        if ref is not row:
            bad = [k for k in _ITEM_KEYS if row.obj[k] != ref.obj[k]]
            for k in bad:
                ctx.sink.error(
                    f"item {rid} differs from the same item in {ref.file} (line {ref.line}): "
                    f"{k!r} is {row.obj[k][:120]!r} here, {ref.obj[k][:120]!r} there; every "
                    "file must hold the same items; " + RESTORE, column=k, **where)
            if bad:
                continue
        text = _prediction_text(row.obj["prediction"], multi_step)
        assert text is not None  # checked by _rows
        out[rid] = prediction_letter(text)
    return out


def _ncimp_classes(ctx: LoadContext) -> dict[str, NounCompound] | None:
    """NCIMP's English compounds (lower-cased key -> record, its ``cls`` NCTTI's class), or
    ``None`` after their loader reported a problem. Only the originals of the naturalistic
    contexts are read (what the check needs, a tenth of a second)."""
    try:
        with warnings.catch_warnings():
            # the originals are never spliced: the warning is about probe sentences, which
            # ncc_stimuli loads (and warns about) when it builds the stimuli
            warnings.simplefilter("ignore", SplicedStimuliWarning)
            stim = load_stimuli("en", contexts="nat", probes="original",
                                data_dir=ctx.data_dir, accept_modified=ctx.accept_modified,
                                collect=ctx.sink.collect)
    except DataErrors as e:  # collecting: the NCIMP problems join this loader's
        ctx.sink.errors.extend(e.errors)
        return None
    ctx.read.update(stim.sources)
    ctx.modified.update(stim.modified)
    return {nc.lower(): rec for (lang, nc), rec in stim.ncs.items() if lang == "en"}


def _items(ctx: LoadContext, first: dict[str, _Row], ncimp: dict[str, NounCompound],
           notes: list[str]) -> dict[str, NccItem]:
    """The items (id -> item) from their first lines, each checked once (the other files'
    lines were compared with it field by field)."""
    out: dict[str, NccItem] = {}
    compound_of: dict[str, str] = {}  # NCIMP key -> the id of its item
    repeated: list[str] = []
    inflected = 0
    for rid, row in first.items():
        obj, where = row.obj, dict(file=row.file, row=row.line, key=rid)
        context: str = obj["context"]
        sentence, mark, options_text = context.partition(_OPTIONS_MARK)
        if not mark or not sentence.strip():
            ctx.sink.error(f"'context' is not the sentence, then {_OPTIONS_MARK!r} and the "
                           "options; " + RESTORE, column="context", **where)
            continue
        options: dict[str, str] = {}
        for k in LETTERS:
            cls = OPTION_CLASSES.get(obj[k])
            if cls is None:
                ctx.sink.error(f"option {obj[k]!r} is not one of "
                               + ", ".join(map(repr, OPTION_CLASSES)) + "; " + RESTORE,
                               column=k, **where)
            else:
                options[k] = cls
        if len(options) < len(LETTERS):
            continue
        if len(set(options.values())) != len(LETTERS):
            ctx.sink.error("the options A-D are not the four classes, each once ("
                           + ", ".join(f"{k}: {obj[k]}" for k in LETTERS) + "); " + RESTORE,
                           column="A", **where)
            continue
        shown = "\t".join(f"{k}: {obj[k]}" for k in LETTERS)
        if options_text != shown:
            ctx.sink.error(f"the options in 'context' ({options_text[:120]!r}) are not those of "
                           f"the keys A-D ({shown!r}); " + RESTORE, column="context", **where)
            continue
        target = obj["target"]
        if target not in LETTERS or options[target] == "none":
            ctx.sink.error(f"gold letter {target!r} is not the letter of a class ("
                           + ", ".join(k for k in LETTERS if options[k] != "none") + "); "
                           + RESTORE, column="target", **where)
            continue
        gold = options[target]
        compound: str = obj["noun_compound"]
        rec = ncimp.get(compound.strip().lower())
        if rec is None:
            ctx.sink.error(f"compound {compound!r} is not an English NCIMP compound; the "
                           "probe's measures need NCIMP's stimuli of it; " + RESTORE,
                           column="noun_compound", **where)
            continue
        ncimp_gold = _FROM_NCIMP.get(rec.cls or "")
        if ncimp_gold != gold:
            ctx.sink.error(f"item {rid} ({compound!r}): the gold class is {gold} "
                           f"({obj[target]}), NCTTI's CompScale of the compound is "
                           f"{ncimp_gold or 'missing'}: the item's gold must be NCTTI's; "
                           + RESTORE, column="target", **where)
            continue
        if rec.nc in compound_of:
            ctx.sink.error(f"compound {compound!r} is also the compound of item "
                           f"{compound_of[rec.nc]}; the probe needs one item per compound; "
                           + RESTORE, column="noun_compound", **where)
            continue
        tokens = tuple(sentence.split())
        spans = compound_span(tokens, rec.nc)
        if not spans:
            ctx.sink.error(f"compound {compound!r} is not in the sentence {sentence[:120]!r} "
                           "(its words, lower-cased, in a row; the last may be a regular "
                           "plural); " + RESTORE, column="context", **where)
            continue
        compound_of[rec.nc] = rid
        if len(spans) > 1:
            repeated.append(f"{rid} {rec.nc}")
        item = NccItem(rid, rec.nc, sentence, tokens, spans[0], gold, options, row.file,
                       row.line)
        inflected += item.span_text.lower() != rec.nc.lower()
        out[rid] = item
    if inflected:
        notes.append(f"ncc: {inflected} item(s) hold the compound in an inflected form (its "
                     "head in a regular plural, e.g. 'love songs')")
    if repeated:
        notes.append(f"ncc: {len(repeated)} item(s) hold the compound more than once; the first "
                     "is its span: " + ", ".join(repeated))
    return out


def _system_notes(systems: list[PublishedSystem], n_items: int) -> list[str]:
    notes = []
    for s in systems:
        if len(s.answers) < n_items:
            notes.append(f"{s.file}: {len(s.answers)} of the {n_items} items (the system "
                         f"answered only those; its accuracy is over them)")
        if s.unanswered:
            notes.append(f"{s.file}: {len(s.unanswered)} prediction(s) without a letter A-D, "
                         "unanswered (scored wrong): items " + ", ".join(s.unanswered))
    return notes


# --- stimuli ---------------------------------------------------------------------------------

def ncc_stimuli(data: NccData, *, data_dir: str | Path | None = None,
                accept_modified: bool = False, wordssyn: str = "first", gold: str = "comp",
                collect: bool = False) -> tuple[Stimuli, dict[str, str], list[str]]:
    """The stimuli NCIMP's measures are computed on for the items: one sentence per compound.

    An item whose sentence is one of its compound's NCIMP naturalistic original sentences
    (S1-S3, by :func:`same_sentence`: both lower-cased, whitespace made single spaces; 229 of
    the 241) gets NCIMP's stimuli of that context, as ``load_stimuli("en", contexts="nat",
    probes="all", wordssyn=wordssyn)`` gives them: the original and every probe (P_Syn,
    P_Comp head and modifier, P_WordsSyn, P_Rand). Any other item (12) gets its own sentence
    as the original (context ``S1``, the span of :attr:`NccItem.span`) and each of the
    compound's NCIMP probe phrases spliced into it at that span (``spliced=True``), the
    phrases of the first NCIMP context (S1-S3) whose original holds the compound in the same
    form as the item (``end users``), else of S1, so that they agree in number.

    Args:
        data: what :func:`load_ncc` gave.
        data_dir, accept_modified: as :func:`load_ncc` (the NCIMP files are read).
        wordssyn, gold: as :func:`ncprobe.data.load_stimuli`.
        collect: report every problem at once instead of stopping at the first.

    Returns:
        ``(stimuli, item_of_nc, notes)``: the :class:`Stimuli` (their ``ncs`` the items'
        compounds with NCIMP's gold scores and classes, ``sources`` and ``modified`` those of
        both data sets, ``notes`` NCIMP's and these), the item id of each compound, and the
        notes of the matching (how many items use NCIMP's sentences, in which context, and
        which are spliced).

    Raises:
        DataError: an item for which no stimuli can be built (its compound has no NCIMP
            naturalistic stimuli in this data directory), or NCIMP's loader's errors.

    Warns:
        SplicedStimuliWarning: from :func:`~ncprobe.data.load_stimuli`, when NCIMP's English
            naturalistic probe sentences are themselves spliced (the official files absent).
    """
    nat = load_stimuli("en", contexts="nat", probes="all", wordssyn=wordssyn, gold=gold,
                       data_dir=data_dir, accept_modified=accept_modified, collect=collect)
    sink = ErrorSink(collect=collect)
    groups: dict[tuple[str, str], list[Stimulus]] = {}
    for s in nat:
        groups.setdefault((s.nc, s.context), []).append(s)
    originals = {k: g[0] for k, g in groups.items()}  # NCIMP lists a context's original first
    out: list[Stimulus] = []
    item_of_nc: dict[str, str] = {}
    matched: Counter = Counter()
    spliced: list[str] = []
    for it in data.items:
        contexts = [c for c in NATURALISTIC if (it.nc, c) in originals]
        if not contexts or (("en", it.nc) not in nat.ncs):
            sink.error(f"item {it.id} ({it.nc!r}): NCIMP has no English naturalistic stimuli "
                       "of the compound here, so no stimuli can be built for the item; "
                       + RESTORE, file=it.file, row=it.line, key=it.id, column="noun_compound")
            continue
        same = next((c for c in contexts if same_sentence(it.sentence, originals[(it.nc,
                                                                                     c)].tokens)),
                    None)
        if same is not None:
            # one context per item, S1, whichever NCIMP context the sentence is: every
            # compound then has the contexts the run covers (the provenance stays in source)
            out += [replace(st, context="S1") for st in groups[(it.nc, same)]]
            matched[same] += 1
        else:
            out += _spliced(it, groups, contexts)
            spliced.append(f"{it.id} {it.nc}")
        item_of_nc[it.nc] = it.id
    sink.raise_if_any()
    notes = [f"ncc: {sum(matched.values())} of {len(data.items)} item sentences are one of "
             "the compound's NCIMP naturalistic sentences (both lower-cased, whitespace made "
             "single spaces) and use NCIMP's stimuli of that context, labelled S1 ("
             + ", ".join(f"{c} {matched[c]}" for c in NATURALISTIC) + "); "
             + (f"{len(spliced)} are not, and get the compound's NCIMP probe phrases spliced "
                "into their own sentence (context S1): " + ", ".join(spliced) if spliced
                else "none is spliced")]
    ncs = {("en", nc): nat.ncs[("en", nc)] for nc in item_of_nc}
    stim = Stimuli(tuple(out), ncs, [*nat.notes, *notes],
                   {**data.sources, **nat.sources}, {**data.modified, **nat.modified},
                   dict(nat.gold_exempt))
    return stim, item_of_nc, notes


def _spliced(it: NccItem, groups: dict[tuple[str, str], list[Stimulus]],
             contexts: list[str]) -> list[Stimulus]:
    """An item's own sentence and the compound's NCIMP probe phrases spliced into it."""
    form = it.span_text.lower()
    phrases_from = next((c for c in contexts if groups[(it.nc, c)][0].target.lower() == form),
                        "S1" if "S1" in contexts else contexts[0])
    where = f"{it.file}:{it.line}:context (item {it.id})"
    out = [Stimulus("en", it.nc, "S1", "original", 1, it.tokens, it.span, it.span_text,
                    where)]
    for s in groups[(it.nc, phrases_from)][1:]:
        tokens, span = splice_phrase(it.tokens, it.span, s.target)
        out.append(Stimulus("en", it.nc, "S1", s.probe, s.variant, tokens, span, s.target,
                            f"{where}; {s.probe} phrase of NCIMP {phrases_from}: {s.source}",
                            spliced=True))
    return out
