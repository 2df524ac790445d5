"""IdioLink (Golan Hashiloni et al., 2026): the retrieval benchmark's data, verified and typed.

IdioLink asks whether an embedding space links a potentially idiomatic expression (PIE) used
in a sentence to sentences with the same meaning. Each split (``test``, ``val``, ``train``)
has two JSON files in ``Intellexus-DSI+IdioLink/data/<split>/`` of the data directory
(:data:`QUERIES_FILE`, :data:`DOCUMENTS_FILE`), pinned in ``ncprobe/data/upstream.tsv``
(need ``extra``; fetched by ``ncprobe data download``). The data's licence is
CC BY-NC-SA 4.0 (:data:`LICENCE`): ncprobe downloads and verifies it, and never ships it.

Both files are JSON lists of objects with the keys of :data:`KEYS`. Every file is verified
against its pin before it is parsed, and every record is validated: a missing or mistyped
key, an unknown ``usage``, a ``span`` not found in its ``sentence``, and a repeated ``id``
(within a file, and between the queries and the documents of a split) are
:class:`~ncprobe.errors.DataError` naming the file, the record (1-based, with its id) and the
key. Relevance (:meth:`IdioLink.relevant`) is the protocol's: a literal query's relevant
documents are the literal documents of its idiom; an idiomatic query's, the idiomatic,
simplification and sense documents of its idiom.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import ErrorSink, UsageError
from .reading import RESTORE, LoadContext
from .sources import resolve_data_dir

__all__ = ["DOCUMENTS_FILE", "DOCUMENT_USAGES", "IdioLink", "KEYS", "LICENCE", "QUERIES_FILE",
           "QUERY_USAGES", "RELEVANT_USAGES", "SPLITS", "IdioLinkRecord", "check_idiolink",
           "idiolink_counts", "load_idiolink", "span_offsets"]

#: The splits, in the order the paper gives them.
SPLITS = ("test", "val", "train")
#: The data's licence (the benchmark's code is Apache-2.0).
LICENCE = "CC BY-NC-SA 4.0"
_ROOT = "Intellexus-DSI+IdioLink/data"
#: The queries of a split, inside the data directory.
QUERIES_FILE = _ROOT + "/{split}/queries.json"
#: The documents (the corpus) of a split, inside the data directory.
DOCUMENTS_FILE = _ROOT + "/{split}/indexes.json"
#: Every record's keys and their JSON types (other keys are ignored).
KEYS: dict[str, type] = {"id": str, "sentence": str, "idiom": str, "span": str,
                         "subject": str, "usage": str, "is_gold": bool}
#: The usages a query may have.
QUERY_USAGES = ("idiomatic", "literal")
#: The usages a document may have (``simplification``, ``sense``: the meaning paraphrased
#: without the PIE; their ``span`` is the paraphrase's words).
DOCUMENT_USAGES = ("idiomatic", "literal", "simplification", "sense")
#: A query's usage -> the usages of its relevant documents (of the same idiom).
RELEVANT_USAGES: dict[str, frozenset[str]] = {
    "literal": frozenset({"literal"}),
    "idiomatic": frozenset({"idiomatic", "simplification", "sense"}),
}
_USAGES = {"query": QUERY_USAGES, "document": DOCUMENT_USAGES}


def span_offsets(text: str, span: str,
                 occurrence: Literal["first", "last"] = "first") -> tuple[int, int]:
    """The character offsets ``(start, end)`` of ``span`` in ``text``: ``text[start:end] == span``.

    Args:
        text: the text (raw, untokenised).
        span: the exact characters to find (case-sensitive).
        occurrence: ``first`` (the protocol's span of a query or document sentence) or
            ``last`` (the span in an instructed query, whose instruction quotes the span
            before the sentence).

    Raises:
        ValueError: ``span`` is empty or not in ``text``, or ``occurrence`` is neither
            ``first`` nor ``last``.

    Example:
        >>> span_offsets("spill the beans, spill", "spill", "last")
        (17, 22)
    """
    if occurrence not in ("first", "last"):
        raise ValueError(f"occurrence must be 'first' or 'last', not {occurrence!r}")
    if not span:
        raise ValueError("empty span")
    start = text.find(span) if occurrence == "first" else text.rfind(span)
    if start < 0:
        raise ValueError(f"span {span!r} not found in {text[:80]!r}")
    return start, start + len(span)


@dataclass(frozen=True)
class IdioLinkRecord:
    """One query or document of IdioLink.

    Attributes:
        role: ``query`` or ``document``.
        id: the record's id, unique within its split.
        sentence: the raw sentence.
        idiom: the PIE the record belongs to.
        span: the PIE as it occurs in the sentence (for ``simplification`` and ``sense``
            documents, the words that paraphrase it).
        start: character offset of the span's first occurrence in ``sentence``.
        end: ``start + len(span)``.
        usage: ``idiomatic`` or ``literal`` (queries); also ``simplification`` or
            ``sense`` (documents).
        subject: the topic (10 in all).
        is_gold: whether the record was human-verified.
    """

    role: str
    id: str
    sentence: str
    idiom: str
    span: str
    start: int
    end: int
    usage: str
    subject: str
    is_gold: bool

    @property
    def offsets(self) -> tuple[int, int]:
        """``(start, end)``: ``sentence[start:end] == span``."""
        return self.start, self.end


@dataclass(frozen=True)
class IdioLink:
    """One split of IdioLink: its queries and documents, and the relevance rule.

    Attributes:
        split: ``test``, ``val`` or ``train``.
        queries: the queries, in file order.
        documents: the documents (the whole corpus of the split), in file order.
        sources: file -> git blob id of each file read.
        modified: file -> ``{"blob": found, "pinned": pinned}`` of files used although they
            differ from their pin (``accept_modified_data=True``).
        notes: what was noticed and tolerated, one line each.
    """

    split: str
    queries: tuple[IdioLinkRecord, ...]
    documents: tuple[IdioLinkRecord, ...]
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    modified: dict[str, dict] = field(default_factory=dict, compare=False)
    notes: tuple[str, ...] = ()
    _by_usage: dict[tuple[str, str], frozenset[str]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _by_id: dict[str, IdioLinkRecord] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        groups: dict[tuple[str, str], set[str]] = {}
        for d in self.documents:
            groups.setdefault((d.idiom, d.usage), set()).add(d.id)
        self._by_usage.update({k: frozenset(v) for k, v in groups.items()})
        self._by_id.update({r.id: r for r in self.queries + self.documents})

    def __getitem__(self, record_id: str) -> IdioLinkRecord:
        """The query or document with this id (``KeyError`` if none)."""
        return self._by_id[record_id]

    @property
    def idioms(self) -> tuple[str, ...]:
        """The idioms of the split, in order of first appearance (queries, then documents)."""
        return tuple(dict.fromkeys(r.idiom for r in self.queries + self.documents))

    def relevant(self, query: IdioLinkRecord | str) -> frozenset[str]:
        """The ids of the documents relevant to a query (a record or its id).

        A literal query's relevant documents are the literal documents of its idiom; an
        idiomatic query's, the idiomatic, simplification and sense documents of its idiom.

        Raises:
            KeyError: no record has this id.
            ValueError: the record is a document.
        """
        q = self._by_id[query] if isinstance(query, str) else query
        if q.role != "query":
            raise ValueError(f"{q.id!r} is a document, not a query")
        out: frozenset[str] = frozenset()
        for usage in RELEVANT_USAGES[q.usage]:
            out |= self._by_usage.get((q.idiom, usage), frozenset())
        return out

    def subset(self, idioms) -> "IdioLink":
        """The queries and documents of some idioms only (in the split's order), e.g. a
        quick run or a test on a slice; the corpus is then those idioms' documents.

        Raises:
            UsageError: an idiom not in the split (with the closest ones), or none given.
        """
        import difflib

        wanted = list(dict.fromkeys(idioms))
        if not wanted:
            raise UsageError("no idiom given: name at least one idiom of the split")
        known = set(self.idioms)
        for idiom in wanted:
            if idiom not in known:
                close = difflib.get_close_matches(idiom, sorted(known), n=3)
                hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                raise UsageError(f"idiom {idiom!r} is not in the {self.split} split of "
                                 f"IdioLink{hint} (`ncprobe data info` lists the splits)")
        keep = set(wanted)
        return IdioLink(self.split, tuple(q for q in self.queries if q.idiom in keep),
                        tuple(d for d in self.documents if d.idiom in keep),
                        dict(self.sources), dict(self.modified), self.notes)

    def counts(self) -> dict:
        """Queries, documents and idioms of the split, with the records per usage.

        Returns:
            ``{"split", "queries", "documents", "idioms", "subjects", "query_usage":
            {usage: n}, "document_usage": {usage: n}}`` (usages in the order of
            :data:`QUERY_USAGES` and :data:`DOCUMENT_USAGES`).
        """
        qu = Counter(r.usage for r in self.queries)
        du = Counter(r.usage for r in self.documents)
        return {
            "split": self.split, "queries": len(self.queries),
            "documents": len(self.documents), "idioms": len(self.idioms),
            "subjects": len({r.subject for r in self.queries + self.documents}),
            "query_usage": {u: qu[u] for u in QUERY_USAGES},
            "document_usage": {u: du[u] for u in DOCUMENT_USAGES},
        }


def load_idiolink(split: str = "test", data_dir: str | Path | None = None, *,
                  accept_modified_data: bool = False, collect: bool = False) -> IdioLink:
    """Load one split of IdioLink, verified against its pins and validated.

    Args:
        split: ``test`` (the published results), ``val`` or ``train``.
        data_dir: the data directory (default: ``$NCPROBE_DATA``, then the cache), the
            one ``ncprobe data download`` fills.
        accept_modified_data: use files whose git blob id differs from their pin (listed
            in ``IdioLink.modified`` and in a note) instead of stopping.
        collect: report every problem at once instead of stopping at the first.

    Returns:
        :class:`IdioLink`.

    Raises:
        DataError: a file is missing or unreadable (run ``ncprobe data download``), differs
            from its pin, is not a JSON list of objects, or a record lacks a key, has a key
            of the wrong type, an unknown usage, a span not in its sentence, an id seen
            before, or a query has no relevant document.
        UsageError: an unknown split (exit 2).

    Example:
        >>> il = load_idiolink("test")                     # doctest: +SKIP
        >>> il.counts()["queries"], len(il.relevant(il.queries[0]))  # doctest: +SKIP
        (1500, 60)
    """
    if split not in SPLITS:
        raise UsageError(f"unknown IdioLink split {split!r}; the splits are "
                         + ", ".join(SPLITS))
    ctx = LoadContext(resolve_data_dir(data_dir), ErrorSink(collect=collect),
                      accept_modified=accept_modified_data)
    result = _load_split(ctx, split)
    ctx.sink.raise_if_any()
    assert result is not None  # every problem was raised above
    return result


def check_idiolink(data_dir: str | Path | None = None) -> tuple[list, list[str]]:
    """Parse the IdioLink files present in the data directory, whatever their pin status.

    For ``ncprobe data check``: the pins are checked there; here each present file is
    parsed and validated (a split with both files also across them).

    Returns:
        ``(errors, notes)``: every :class:`~ncprobe.errors.DataError` found, and notes
        (the counts of each split that loaded, and what the loader noted).
    """
    counts, errors, notes = _present_splits(data_dir)
    return errors, [f"IdioLink {c['split']}: {c['queries']} queries, {c['documents']} "
                    f"documents, {c['idioms']} idioms" for c in counts.values()] + notes


def idiolink_counts(data_dir: str | Path | None = None) -> tuple[dict[str, dict], list]:
    """:meth:`IdioLink.counts` of every split whose files are present (``ncprobe data info``).

    Files are counted as they are (modified ones included: their pins are reported
    elsewhere). Returns ``(split -> counts, errors)``.
    """
    counts, errors, _ = _present_splits(data_dir)
    return counts, errors


def _present_splits(data_dir: str | Path | None) -> tuple[dict[str, dict], list, list[str]]:
    ctx = LoadContext(resolve_data_dir(data_dir), ErrorSink(collect=True), accept_modified=True)
    counts: dict[str, dict] = {}
    notes: list[str] = []
    for split in SPLITS:
        present = [role for role, rel in _files(split).items() if ctx.exists(rel)]
        if not present:
            continue
        il = _load_split(ctx, split, roles=present)
        if il is not None:
            if len(present) == 2:
                counts[split] = il.counts()
            notes += [n for n in il.notes if not n.startswith("MODIFIED DATA")]
    return counts, list(ctx.sink.errors), notes


def _files(split: str) -> dict[str, str]:
    return {"query": QUERIES_FILE.format(split=split),
            "document": DOCUMENTS_FILE.format(split=split)}


def _load_split(ctx: LoadContext, split: str,
                roles: list[str] | tuple[str, ...] = ("query", "document")) -> IdioLink | None:
    """Read and validate the files of ``roles``; problems go to ``ctx.sink``."""
    parsed: dict[str, list[IdioLinkRecord]] = {}
    notes: list[str] = []
    before = len(ctx.sink.errors)
    for role in roles:
        rel = _files(split)[role]
        records = _parse_file(ctx, rel, role, notes)
        if records is not None:
            parsed[role] = records
    queries, documents = parsed.get("query"), parsed.get("document")
    if queries is not None and documents is not None:
        _check_across(ctx, split, queries, documents)
    if len(ctx.sink.errors) > before or len(parsed) < len(roles):
        return None
    for rel, m in ctx.modified.items():
        if rel in (_files(split)["query"], _files(split)["document"]):
            notes.insert(0, f"MODIFIED DATA: {rel} (git blob {m['blob']}, pinned "
                            f"{m['pinned']}) was used as it is (accept_modified_data); results "
                            "are not those of the published data")
    files = set(_files(split).values())
    return IdioLink(split, tuple(queries or ()), tuple(documents or ()),
                    sources={k: v for k, v in ctx.read.items() if k in files},
                    modified={k: v for k, v in ctx.modified.items() if k in files},
                    notes=tuple(notes))


def _parse_file(ctx: LoadContext, rel: str, role: str,
                notes: list[str]) -> list[IdioLinkRecord] | None:
    data = ctx.verified_bytes(rel)
    if data is None:
        return None
    try:
        items = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        ctx.sink.error(f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                       + RESTORE, file=rel)
        return None
    except json.JSONDecodeError as e:
        ctx.sink.error(f"not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}); "
                       + RESTORE, file=rel)
        return None
    if not isinstance(items, list):
        ctx.sink.error(f"expected a JSON list of records, found a JSON {_json_type(items)}; "
                       + RESTORE, file=rel)
        return None
    if not items:
        ctx.sink.error("the list holds no record; " + RESTORE, file=rel)
        return None
    usages = _USAGES[role]
    out: list[IdioLinkRecord] = []
    first_row: dict[str, int] = {}
    repeated_spans = 0
    extra: Counter = Counter()
    for i, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            ctx.sink.error(f"record is a JSON {_json_type(item)}, not an object; " + RESTORE,
                           file=rel, row=i)
            continue
        rid = item.get("id")
        key = rid if isinstance(rid, str) else None
        where = dict(file=rel, row=i, key=key)
        ok = True
        for name, typ in KEYS.items():
            if name not in item:
                ctx.sink.error(f"missing key {name!r}; " + RESTORE, column=name, **where)
                ok = False
            elif type(item[name]) is not typ:
                want = "true or false" if typ is bool else "a string"
                ctx.sink.error(f"{name!r} is {item[name]!r} ({_json_type(item[name])}), "
                               f"expected {want}; " + RESTORE, column=name, **where)
                ok = False
        extra.update(k for k in item if k not in KEYS)
        if not ok:
            continue
        if not rid:
            ctx.sink.error("empty id; " + RESTORE, column="id", **where)
            continue
        if rid in first_row:
            ctx.sink.error(f"id {rid!r} repeats record {first_row[rid]} of the same file; ids "
                           "must be unique; " + RESTORE, column="id", **where)
            continue
        first_row[rid] = i
        if item["usage"] not in usages:
            ctx.sink.error(f"unknown usage {item['usage']!r} for a {role}; expected one of "
                           + ", ".join(usages) + "; " + RESTORE, column="usage", **where)
            continue
        sentence, span = item["sentence"], item["span"]
        try:
            start, end = span_offsets(sentence, span)
        except ValueError:
            ctx.sink.error(f"span {span!r} not found in the sentence {sentence[:100]!r} (exact, "
                           "case-sensitive); " + RESTORE, column="span", **where)
            continue
        if sentence.find(span, start + 1) >= 0:
            repeated_spans += 1
        out.append(IdioLinkRecord(role, rid, sentence, item["idiom"], span, start, end,
                                  item["usage"], item["subject"], item["is_gold"]))
    if repeated_spans:
        notes.append(f"{rel}: {repeated_spans} record(s) whose span occurs more than once in "
                     "the sentence; the first occurrence is the span")
    if extra:
        notes.append(f"{rel}: keys not used by ncprobe ignored: "
                     + ", ".join(f"{k} ({n})" for k, n in sorted(extra.items())))
    return out


def _check_across(ctx: LoadContext, split: str, queries: list[IdioLinkRecord],
                  documents: list[IdioLinkRecord]) -> None:
    """Ids unique across the split's two files; every query has a relevant document."""
    qrel, drel = _files(split)["query"], _files(split)["document"]
    doc_index = {d.id: i for i, d in enumerate(documents, start=1)}
    groups = {(d.idiom, d.usage) for d in documents}
    for i, q in enumerate(queries, start=1):
        if q.id in doc_index:
            ctx.sink.error(f"id {q.id!r} is also the id of record {doc_index[q.id]} of {drel}; "
                           "query and document ids must differ; " + RESTORE,
                           file=qrel, row=i, key=q.id, column="id")
        if not any((q.idiom, u) in groups for u in RELEVANT_USAGES[q.usage]):
            ctx.sink.error(f"no relevant document: {drel} has no "
                           + " / ".join(sorted(RELEVANT_USAGES[q.usage]))
                           + f" document of idiom {q.idiom!r}; " + RESTORE,
                           file=qrel, row=i, key=q.id, column="idiom")


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "list", str: "string", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)
