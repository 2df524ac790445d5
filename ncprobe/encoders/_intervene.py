"""An intervention inside a transformer's forward pass: the hidden state of one layer changed
at some positions, and the pass continued from the changed state.

What changes the state is the caller's (:class:`Intervention`: e.g. an eraser,
:class:`ncprobe.amnesic.forward.ForwardErasure`); where it acts is this module's:

* **the layer** follows ``output_hidden_states``: layer ``0`` is the embeddings' output (the
  input of the first block, changed by a pre-hook on it), layer ``l >= 1`` the output of block
  ``l`` (changed by a forward hook on it that runs before every other hook, so the hidden
  state the model reports for layer ``l`` is the changed one, and every later layer is
  computed from it);
* **the positions**: ``span``, the tokens of the expression's words (those pooled into its
  span vector), or ``all``, every token of the sentence (its special tokens included; never
  the padding).

Pooling is a convex combination of the token states (sub-token means, then word means), so an
affine change applied to every pooled position changes the pooled vector of layer ``l`` by
exactly that change: an eraser fitted on the span vectors of layer ``l`` erases, in the forward
pass, what it erases in the stored span vectors of that layer, and the layers after it are the
model's own answer to the erased state.

The hooks are installed for one forward pass and removed after it, also when it fails.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Iterator, Protocol

from ..errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: Where an intervention acts: the expression's tokens, or every token of the sentence.
POSITIONS = ("span", "all")


class Intervention(Protocol):
    """What an encoder applies inside its forward pass.

    Attributes:
        layer: the hidden state changed (``0``: the embeddings' output, ``l``: block ``l``'s).
        positions: one of :data:`POSITIONS`.
        fingerprint: what the intervention is, as text; part of the encoder's fingerprint, so
            the vectors of an intervened pass are cached apart from the plain pass's.

    ``intervention(states)`` takes the ``(n, d)`` float32 states of the positions it acts on
    and returns the changed ones, the same shape (any float dtype; cast back to the model's).
    """

    layer: int
    positions: str
    fingerprint: str

    def __call__(self, states: torch.Tensor) -> torch.Tensor: ...


def check_intervention(intervention: Any, n_layers: int, name: str) -> None:
    """Refuse an intervention at a layer the model does not have, or at unknown positions.

    Raises:
        UsageError: naming the model, its layers and the layer asked for.
    """
    layer = getattr(intervention, "layer", None)
    if not isinstance(layer, int) or isinstance(layer, bool) or not 0 <= layer <= n_layers:
        raise UsageError(f"an intervention at layer {layer!r}: {name} has layers 0 (the "
                         f"embeddings) .. {n_layers}; give one of them")
    positions = getattr(intervention, "positions", None)
    if positions not in POSITIONS:
        raise UsageError(f"an intervention at positions {positions!r}: give one of "
                         f"{', '.join(POSITIONS)}")
    fp = getattr(intervention, "fingerprint", None)
    if not isinstance(fp, str) or not fp:
        raise UsageError("an intervention needs a non-empty text fingerprint (its cache key)")


def blocks(model: Any, n_layers: int) -> Any:
    """The model's ``n_layers`` transformer blocks, in order: its one module list of that
    length (BERT's ``encoder.layer``, LLaMA's ``layers``, GPT-2's ``h``).

    Raises:
        UsageError: no such list, or more than one (naming them): the model's layers cannot be
            told apart, so no intervention is made on a guess.
    """
    import torch

    found = [(name, m) for name, m in model.named_modules()
             if isinstance(m, torch.nn.ModuleList) and len(m) == n_layers]
    if len(found) != 1:
        names = ", ".join(name or "(the model)" for name, _ in found) or "none"
        raise UsageError(f"cannot find the {n_layers} transformer blocks of "
                         f"{type(model).__name__} to intervene in (module lists of that length: "
                         f"{names}); this architecture takes no intervention in its forward "
                         "pass")
    return found[0][1]


def position_mask(positions: str, word_ids: torch.Tensor, starts: torch.Tensor,
                  ends: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``(B, T)`` bool: the tokens an intervention acts on. ``span``: tokens of the words
    ``starts[b] <= w < ends[b]`` (special and pad tokens have word id ``-1``); ``all``: every
    token the attention mask keeps."""
    if positions == "span":
        w = word_ids
        return (w >= 0) & (w >= starts[:, None]) & (w < ends[:, None])
    return attention_mask.bool()


def _changed(intervention: Intervention, state: torch.Tensor, mask: torch.Tensor
             ) -> torch.Tensor:
    mask = mask.to(state.device)  # a model spread over devices: the block's own
    if not bool(mask.any()):
        return state
    out = state.clone()
    new = intervention(state[mask].float())
    out[mask] = new.to(state.dtype)
    return out


@contextlib.contextmanager
def intervening(model: Any, n_layers: int, intervention: Intervention, mask: torch.Tensor
                ) -> Iterator[None]:
    """The hooks that apply ``intervention`` at the positions ``mask`` of its layer, for the
    forward passes run inside the block (the module says where)."""
    layers = blocks(model, n_layers)
    at = intervention.layer
    if at == 0:
        def before(module: Any, args: tuple, kwargs: dict) -> Any:
            if args:
                return (_changed(intervention, args[0], mask), *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": _changed(
                intervention, kwargs["hidden_states"], mask)}

        handle = layers[0].register_forward_pre_hook(before, with_kwargs=True, prepend=True)
    else:
        def after(module: Any, args: tuple, output: Any) -> Any:
            if isinstance(output, tuple):
                return (_changed(intervention, output[0], mask), *output[1:])
            return _changed(intervention, output, mask)

        handle = layers[at - 1].register_forward_hook(after, prepend=True)
    try:
        yield
    finally:
        handle.remove()
