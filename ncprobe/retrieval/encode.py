"""Raw texts with character spans -> vectors, through the embedding cache.

The retrieval probe encodes raw (untokenised) text: documents as the model's own sentence
embedding, queries as a sentence embedding or as the mean of the last hidden states of the
sub-word tokens that overlap a character span (method: :meth:`SBertEncoder.encode_texts
<ncprobe.encoders.sbert.SBertEncoder.encode_texts>`). :class:`TextEncoder` puts that behind
the :class:`~ncprobe.encoders.base.Encoder` protocol, one item being one text (as a
one-word "sentence") and its character span, so :func:`ncprobe.embed.embed` deduplicates,
batches by length and stores the vectors in the content-addressed
:class:`~ncprobe.cache.store.EmbeddingStore` exactly as it does for NCIMP stimuli. The pooling rule
is in the fingerprint (:data:`POOLING`), so these vectors never share a store entry with
the word-pooled NCIMP vectors of the same model.

One forward pass gives both vectors of an item: a query's text with its span serves the
``sentence`` and the ``span`` modes, its instructed text the two instruction modes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from ..encoders.base import Encoded
from ..errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ..encoders.sbert import SBertEncoder

__all__ = ["NO_SPAN", "POOLING", "TextEncoder", "TextItem", "check_text_model", "text_encoder"]

#: The pooling rule of :class:`TextEncoder`'s vectors, recorded in its fingerprint.
POOLING = "st-sentence/charspan-subtoken-mean-last-hidden"
#: The span of an item that wants only its sentence vector.
NO_SPAN = (0, 0)


@dataclass(frozen=True)
class TextItem:
    """One text to encode and the character span to pool (:data:`NO_SPAN`: none).

    ``tokens`` and ``span`` are what :func:`ncprobe.embed.embed` keys the store with;
    ``size`` is what it sorts batches by (the text's length: less padding).
    """

    text: str
    span: tuple[int, int] = NO_SPAN

    @property
    def tokens(self) -> tuple[str]:
        return (self.text,)

    @property
    def size(self) -> int:
        return len(self.text)


class TextEncoder:
    """A sentence-transformers encoder seen through the Encoder protocol, on raw texts.

    Each "sentence" is a one-element sequence holding the raw text and each span a
    character span (see :class:`TextItem`); ``encode`` returns one view: the model's own
    sentence embedding and the span vector (NaN, and counted in ``missing_span_words``,
    where a wanted span has no token; never the sentence vector).
    """

    levels = ("sent", "nc")
    #: one view: the transformer module's last hidden states
    views = ((-1,),)

    def __init__(self, model: SBertEncoder) -> None:
        self.model = model
        self.name = model.name
        self.dim = model.dim

    @property
    def sent_dim(self) -> int:
        """Size of the model's own sentence embedding (loads the model)."""
        return self.model.sent_dim

    def fingerprint(self) -> dict:
        return {**self.model.fingerprint(), "views": [[-1]], "pooling": POOLING}

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        return self.model.encode_texts([s[0] for s in sentences], spans)


def text_encoder(encoder) -> TextEncoder:
    """The :class:`TextEncoder` of a loaded encoder, which must be a sentence-transformers
    model: the retrieval probe encodes documents with the model's own sentence embedding.

    Raises:
        UsageError: another kind of model (a static vector file, a plain transformer, ELMo,
            an API model).
    """
    from ..encoders.sbert import SBertEncoder

    if not isinstance(encoder, SBertEncoder):
        raise UsageError(_not_sentence_transformers(encoder.name))
    return TextEncoder(encoder)


def check_text_model(name: str, *, allow_remote_code: bool = False) -> None:
    """Refuse, before anything is loaded, a model :func:`text_encoder` would refuse once
    loaded: one that is not a sentence-transformers model (its family, as
    :func:`~ncprobe.encoders.registry.load_encoder` resolves the name). Loading it first
    would refuse it for an option it does not take (the layer view the probe asks of every
    model), which the user never gave.

    Raises:
        UsageError: another kind of model, or a name that is no model.
    """
    from ..encoders.registry import resolve_target
    from ..encoders.sbert import SBertEncoder

    target = resolve_target(name, "en", allow_pickle=False, allow_gensim=False,
                            allow_remote_code=allow_remote_code)
    if not issubclass(target.cls, SBertEncoder):
        raise UsageError(_not_sentence_transformers(target.label))


def _not_sentence_transformers(name: str) -> str:
    return (f"{name} is not a sentence-transformers model: the retrieval probe encodes "
            "documents with the model's own sentence embedding and pools spans from its token "
            "states, which only sentence-transformers models have (a hub id "
            "sentence-transformers/NAME, a directory with modules.json, or an alias of "
            "`ncprobe models --probe idiolink`, which lists the paper's). Use one, or --model "
            "bm25 for the lexical control")
