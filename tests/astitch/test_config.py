"""AStitchConfig: every option's check, the same from Python and the command line."""

from __future__ import annotations

import math

import pytest

from ncprobe.astitch.config import AStitchConfig, run_dir
from ncprobe.errors import UsageError


def test_defaults_and_normal_forms() -> None:
    cfg = AStitchConfig()
    assert cfg.models == ("glove-6b-50d",) and cfg.langs == ("en",)
    assert cfg.settings == ("zero-shot", "one-shot", "few-shot", "one-shot-semeval")
    # auto: GloVe is the static control, unless it is a probed model
    assert cfg.static_model is None
    assert AStitchConfig(models=["minilm"]).static_model == "glove-6b-50d"
    assert AStitchConfig(models=["minilm"], static="none").static_model is None
    cfg = AStitchConfig(models="a,b", langs="pt,en", c_grid="10,0.1", splits="test,dev")
    assert cfg.models == ("a", "b") and cfg.langs == ("en", "pt")
    assert cfg.c_grid == (0.1, 10.0) and cfg.splits == ("dev", "test")
    assert cfg.settings == ()  # no training split: the paraphrase probe only
    assert run_dir(cfg).name == "astitch-a+b-en+pt-splits_dev+test"
    assert run_dir(AStitchConfig(models=["minilm"], layers="all")).name == \
        "astitch-minilm-en-layers_all"


def test_one_shot_semeval_needs_the_zero_shot_and_the_one_shot_rows() -> None:
    # SemEval-2022 Task 2 A's one-shot trained on the zero-shot plus the one-shot rows
    one = AStitchConfig(splits="train_one_shot,dev,test")
    assert one.settings == ("one-shot",)
    both = AStitchConfig(splits="train_zero_shot,train_one_shot,dev,test")
    assert both.settings == ("zero-shot", "one-shot", "one-shot-semeval")


def test_one_shot_semeval_trains_on_the_union_of_the_two_splits() -> None:
    import numpy as np

    from ncprobe.astitch.probe import training_rows

    # rows of each split, in the records' order (zero-shot first, as the files are read)
    by_split = {"train_zero_shot": np.array([0, 1, 2]), "train_one_shot": np.array([3, 4]),
                "train_few_shot": np.array([5]), "dev": np.array([6]), "test": np.array([7])}
    assert training_rows(by_split, "one-shot-semeval").tolist() == [0, 1, 2, 3, 4]
    assert training_rows(by_split, "one-shot").tolist() == [3, 4]
    assert training_rows(by_split, "zero-shot").tolist() == [0, 1, 2]


@pytest.mark.parametrize("options, named", [
    ({"langs": ["fr"]}, "--lang"), ({"langs": []}, "--lang"),
    ({"models": []}, "--model"), ({"models": ["a", "a"]}, "twice"),
    ({"c_grid": [math.nan]}, "--c-grid"), ({"c_grid": [math.inf]}, "--c-grid"),
    ({"c_grid": [0]}, "--c-grid"), ({"c_grid": [-1]}, "--c-grid"),
    ({"c_grid": ["x"]}, "--c-grid"), ({"c_grid": [1, 1.0]}, "--c-grid"),
    ({"c_grid": [True]}, "--c-grid"),
    ({"n_boot": -1}, "--n-boot"), ({"n_boot": 1.5}, "--n-boot"), ({"seed": -1}, "--seed"),
    ({"n_perm": -1}, "--n-perm"), ({"batch_size": 0}, "--batch-size"),
    ({"splits": ["nope"]}, "--splits"), ({"splits": ["train_few_shot", "test"]}, "dev"),
    ({"correction": "bonferroni"}, "bonferroni"), ({"static": ""}, "--static"),
    ({"models": ["glove-6b-50d"], "static": "glove-6b-50d"}, "--static"),
])
def test_bad_values_are_usage_errors(options, named) -> None:
    with pytest.raises(UsageError, match=named.replace("-", r"\-")):
        AStitchConfig(**options)


def test_contexts_and_splits_name_the_directory() -> None:
    cfg = AStitchConfig(contexts="excluded", splits="dev,test")
    assert cfg.contexts == ("excluded",)
    assert run_dir(cfg).name == "astitch-glove-6b-50d-en-context_excluded-splits_dev+test"
    with pytest.raises(UsageError, match="--context"):
        AStitchConfig(contexts="both")
