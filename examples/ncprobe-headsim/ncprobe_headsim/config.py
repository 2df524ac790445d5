"""The run options of ``ncprobe run headsim``: one dataclass, one field per option."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HeadSimConfig:
    """The run options of ``ncprobe run headsim``: one field each, its default and help."""

    model: str = field(default="glove-6b-50d", metadata={
        "help": "model alias, hub id, directory or vector file (default glove-6b-50d)"})
    lang: str = field(default="en", metadata={"choices": ("en", "pt"),
                                              "help": "NCIMP language (default en)"})
    n_boot: int = field(default=1000, metadata={
        "type": "count", "metavar": "N", "help": "bootstrap resamples of rho (default 1000)"})
    seed: int = field(default=0, metadata={"type": "count", "help": "seed (default 0)"})

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model: give a model")
