"""Encoders: every model family behind one protocol (see :mod:`ncprobe.encoders.base`)."""

from .base import Encoded, Encoder
from .registry import MODELS, ModelSpec, load_encoder, register

__all__ = ["MODELS", "Encoded", "Encoder", "ModelSpec", "load_encoder", "register"]
