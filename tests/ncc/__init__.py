"""Tests of the SemanticQA NCC probe (``ncprobe.ncc``)."""
