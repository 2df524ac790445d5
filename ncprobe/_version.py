"""The installed ncprobe's version, from its package metadata (setup.cfg is the one source)."""

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("ncprobe")
except PackageNotFoundError:  # a source tree run without installing (PYTHONPATH=.)
    VERSION = "0+unknown"
