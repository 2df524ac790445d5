"""Erasure inside the forward pass: a concept's eraser applied to a transformer's hidden state
at one layer, the pass continued from the erased state (the causal test of amnesic probing).

:class:`ForwardErasure` is a vector transform (:mod:`ncprobe.transform`) with an
``intervention``: a target probe's encoder applies the eraser in its forward pass
(:func:`ncprobe.transform.in_forward`; :mod:`ncprobe.encoders._intervene` says where), so
every later layer is the model's own answer to the erased state, and the views are pooled
from that pass as usual. The vectors are cached under the encoder's fingerprint, which names
the erasure (:attr:`ForwardErasure.fingerprint`: the eraser's, the layer's and the
positions'), never under the plain pass's; the transform itself then leaves the vectors as
they are read.

The eraser is the one fitted on the stored vectors of the erased layer's own view: on the
span vectors for ``positions="span"`` (every token of the expression erased: their pooled
span vector is then erased exactly as in the stored vectors, pooling being a convex
combination of the tokens' states), on the sentence vectors for ``"all"`` (every token of the
sentence).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..encoders._intervene import POSITIONS
from ..errors import UsageError
from .erase import Eraser

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: Where in the sentence the eraser acts (:data:`ncprobe.encoders._intervene.POSITIONS`), and
#: the level whose eraser it applies there.
POSITION_LEVEL = {"span": "nc", "all": "sent"}
assert tuple(POSITION_LEVEL) == POSITIONS, "one level per position of the forward pass"


def level_of(positions: str) -> str:
    """The level whose eraser acts at ``positions`` (:data:`POSITION_LEVEL`).

    Raises:
        UsageError: ``positions`` is none of them (naming ``--positions``).
    """
    if positions not in POSITION_LEVEL:
        raise UsageError(f"positions={positions!r} (--positions): give one of "
                         f"{', '.join(POSITION_LEVEL)}")
    return POSITION_LEVEL[positions]
_VERSION = b"ncprobe.amnesic.ForwardErasure/1"


@dataclass(frozen=True, eq=False)
class TorchEraser:
    """An :class:`~ncprobe.amnesic.erase.Eraser` as an intervention in a forward pass
    (:class:`ncprobe.encoders._intervene.Intervention`): the same affine map on the states of
    the positions it is given, computed in float64 on their device. The empty eraser returns
    the states as they are (the pass is the plain pass, bit for bit)."""

    eraser: Eraser
    layer: int
    positions: str
    fingerprint: str
    _on: dict = field(default_factory=dict, repr=False)

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        if self.eraser.is_identity:
            return states
        import torch

        key = str(states.device)
        if key not in self._on:  # the arrays, once per device
            self._on[key] = tuple(torch.tensor(np.array(a, dtype=np.float64),
                                               device=states.device)
                                  for a in (self.eraser.proj_left, self.eraser.proj_right,
                                            self.eraser.bias))
        left, right, bias = self._on[key]
        x = states.double()
        return x - ((x - bias) @ right.T) @ left.T


@dataclass(frozen=True, eq=False)
class ForwardErasure:
    """A concept's eraser applied in the forward pass at ``layer`` (the module says how), as
    a vector transform whose ``intervention`` the target's encoder applies.

    Attributes:
        eraser: fitted on the stored vectors of view ``layer`` at the level of ``positions``
            (:data:`POSITION_LEVEL`).
        layer: the hidden state erased (``0``: the embeddings' output; ``l``: block ``l``'s).
        positions: ``span`` (the expression's tokens) or ``all`` (the sentence's).
        what: what the eraser erases (said in the run's notes, fingerprinted).
    """

    eraser: Eraser
    layer: int
    positions: str
    what: str
    #: ``erase-forward:`` and the sha256 of :attr:`what`, the layer, the positions and the
    #: eraser's fingerprint (set when made).
    fingerprint: str = field(init=False, default="")
    intervention: TorchEraser = field(init=False, repr=False)

    def __post_init__(self) -> None:
        level_of(self.positions)
        h = hashlib.sha256(_VERSION + b"\0" + self.what.encode() + b"\0")
        h.update(f"{self.layer}\0{self.positions}\0{self.eraser.fingerprint}".encode())
        fp = f"erase-forward:{h.hexdigest()[:16]}"
        object.__setattr__(self, "fingerprint", fp)
        object.__setattr__(self, "intervention",
                           TorchEraser(self.eraser, self.layer, self.positions, fp))

    def __call__(self, view: str, level: str, vectors: np.ndarray,
                 groups: Sequence[str]) -> np.ndarray:
        # the vectors are those of the erased pass already (its encoder applied the eraser)
        return np.array(vectors, copy=True)


def forward_erasure(erasers: Mapping[tuple[str, str], Any], layer: int, positions: str,
                    what: str) -> ForwardErasure:
    """The :class:`ForwardErasure` of the eraser that ``erasers`` (a fitted concept's, by view
    and level: :attr:`ncprobe.amnesic.erase.ErasingTransform.erasers`) hold for view
    ``layer`` at the level of ``positions``.

    Raises:
        UsageError: no eraser for that view and level; erasers by group (fold erasers: which
            one applies to a pass depends on its item's group, which the pass does not know).
    """
    key = (str(layer), level_of(positions))
    e = erasers.get(key)
    if e is None:
        held = ", ".join(f"{v}/{lv}" for v, lv in sorted(erasers))
        raise UsageError(f"no eraser for view {key[0]}, level {key[1]} ({what}; it holds "
                         f"{held}): the erased layer's own view must be fitted")
    if not isinstance(e, Eraser):
        raise UsageError(f"{what}: its erasers are fitted per fold of groups (so that no "
                         "expression is erased by an eraser fitted on itself), and a forward "
                         "pass is shared by every stimulus of a sentence whatever its group: "
                         "erase in the forward pass with a concept that has held-out rows "
                         "(--concept astitch), or erase the stored vectors (--where vectors)")
    return ForwardErasure(e, layer, positions, what)
