"""Tests of the amnesic probe's eraser (``ncprobe.amnesic``)."""
