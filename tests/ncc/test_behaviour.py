"""ncprobe.ncc.behaviour: a local causal LM answers SemanticQA's NCC items zero-shot.

The items and the template are the real ones (the shared data copy); the model is a tiny
LLaMA with a byte-level BPE tokenizer written out by hand (tests/tiny_models.py: every byte a
token, and " A".." D" merged), so that the letters are single tokens as in GPT-2 or LLaMA-3.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from ncprobe.errors import DataError, ModelUnavailableError
from ncprobe.ncc.behaviour import (
    BehaviourCacheWarning,
    answer_items,
    fill_prompt,
    item_context,
    letter_rule,
)

from ..tiny_models import byte_bpe, tiny_byte_llama, tiny_gpt2

#: the tiny causal LM is built per session (~3 s) and every test runs it
pytestmark = pytest.mark.slow

SQA = Path("jacklanda+SemanticQA/semantic_qa")
TEMPLATE = SQA / "prompts/noun_compound_compositionality_zeroshot.txt"
PUBLISHED = (SQA / "results/noun_compound_compositionality"
             / "noun_compound_compositionality_0-shot_gpt-5.json")
#: the option texts of SemanticQA's files and the probe's classes (ncc_spec.md), written out
CLASS_OF = {"Non-compositional": "NC", "Partly compositional": "PC", "Compositional": "C",
            "None of the above": "none"}


@dataclass
class Item:
    id: str
    nc: str
    sentence: str
    options: dict = field(default_factory=dict)


def _rows(raw_dir: Path) -> list[dict]:
    lines = (raw_dir / PUBLISHED).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _item(row: dict) -> Item:
    sentence = row["context"].split("\nOptions: ")[0]
    return Item(row["id"], row["noun_compound"], sentence,
                {k: CLASS_OF[row[k]] for k in "ABCD"})


@pytest.fixture(scope="module")
def rows(raw_dir) -> list[dict]:
    return _rows(raw_dir)[:6]


@pytest.fixture(scope="module")
def items(rows) -> list[Item]:
    return [_item(r) for r in rows]


@pytest.fixture(scope="module")
def template(raw_dir) -> str:
    return (raw_dir / TEMPLATE).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def lm_dir(tiny_byte_llama_dir) -> Path:
    return tiny_byte_llama_dir


# --- prompts and letters -------------------------------------------------------------------------

def test_the_context_is_the_published_files_field_for_every_item(raw_dir, template) -> None:
    rows = _rows(raw_dir)
    assert len(rows) == 241
    for row in rows:
        item = _item(row)
        assert item_context(item) == row["context"], row["id"]
        # SemanticQA's construct_prompt: {{context}} first, then {{noun compound}}
        expected = template.replace("{{context}}", row["context"]).replace(
            "{{noun compound}}", row["noun_compound"])
        assert fill_prompt(template, item) == expected
    assert expected.endswith("(Option only, no analysis):\n")


def test_the_loaded_items_give_the_published_prompts(raw_dir) -> None:
    # the items as the probe loads them (ncprobe.data.semanticqa) and its zero-shot prompt
    from ncprobe.data.semanticqa import load_ncc

    data = load_ncc(raw_dir)
    template = data.prompts["zeroshot"]
    assert template == (raw_dir / TEMPLATE).read_text(encoding="utf-8")
    rows = {r["id"]: r for r in _rows(raw_dir)}
    assert sorted(it.id for it in data.items) == sorted(rows)
    for it in data.items:
        row = rows[it.id]
        assert fill_prompt(template, it) == template.replace(
            "{{context}}", row["context"]).replace("{{noun compound}}", row["noun_compound"])


def test_a_context_whose_options_disagree_is_refused(rows) -> None:
    item = _item(rows[0])
    swapped = dict(item.options, A=item.options["B"], B=item.options["A"])
    assert swapped != item.options
    bad = Item(item.id, item.nc, item.sentence, swapped)
    bad.context = rows[0]["context"]  # type: ignore[attr-defined]
    with pytest.raises(DataError, match=f"item {item.id}: its context's options"):
        item_context(bad)


def test_duplicate_item_ids_are_refused(lm_dir, items, template, own_cache) -> None:
    with pytest.raises(DataError, match=f"item id\\(s\\) {items[1].id} given more than once"):
        answer_items(lm_dir, [items[0], items[1], items[1]], template, device="cpu")


def test_the_letter_form_follows_the_prompt_and_falls_back() -> None:
    tok = byte_bpe()
    ids = tok.convert_tokens_to_ids
    after_newline = letter_rule(tok, ["Output:\n", "one two:\n"])
    assert (after_newline.form, after_newline.token_ids) == ("A", tuple(ids(list("ABCD"))))
    after_colon = letter_rule(tok, ["Output:", "one two:"])
    assert after_colon.form == " A"
    assert after_colon.token_ids == tuple(ids(["ĠA", "ĠB", "ĠC", "ĠD"]))
    # without the merges " A" is two tokens (Ġ, A): the bare letter is the fallback
    assert letter_rule(byte_bpe(spaced_letters=False), ["Output:"]).form == "A"


def test_a_tokenizer_without_letter_tokens_cannot_answer(tiny_llama_dir, template, items,
                                                         own_cache) -> None:
    # the tiny WordPiece vocabulary has no A-D: every letter is [UNK]
    with pytest.raises(ModelUnavailableError, match="cannot answer the items by letter "
                       "probability.*unknown token"):
        answer_items(tiny_llama_dir, items, template, device="cpu")


# --- the answers -------------------------------------------------------------------------------

def _letter_logprobs_by_hand(path, rows, template) -> tuple[list[int], list[np.ndarray]]:
    """The ids of the letters A-D and, per row, their log-probabilities after the filled
    zero-shot template: one direct forward pass of the saved model per prompt."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    letter_ids = tok.convert_tokens_to_ids(list("ABCD"))  # the template ends with a newline
    out = []
    for row in rows:
        prompt = template.replace("{{context}}", row["context"]).replace(
            "{{noun compound}}", row["noun_compound"])
        with torch.no_grad():
            logits = model(**tok(prompt, return_tensors="pt")).logits[0, -1]
        out.append(torch.log_softmax(logits.double(), -1)[letter_ids].numpy())
    return letter_ids, out


def test_each_answer_is_the_argmax_of_a_direct_forward_pass(lm_dir, rows, items, template,
                                                            own_cache) -> None:
    got = answer_items(lm_dir, items, template, device="cpu", batch_size=4)
    letter_ids, logprobs = _letter_logprobs_by_hand(lm_dir, rows, template)
    assert got.rule.form == "A" and got.rule.token_ids == tuple(letter_ids)
    letters = set()
    for row, lp in zip(rows, logprobs, strict=True):
        letter = "ABCD"[int(np.argmax(lp))]
        answer = got[row["id"]]
        assert answer.letter == letter
        assert answer.predicted == CLASS_OF[row[letter]]
        np.testing.assert_allclose([answer.logprobs[k] for k in "ABCD"], lp, atol=1e-5)
        letters.add(letter)
    assert len(letters) > 1  # the items do not all get one letter: the mapping is exercised
    assert got.classes == {a.item: a.predicted for a in got.answers}
    assert [a.item for a in got.answers] == [it.id for it in items]
    assert got.fingerprint["revision"].startswith("dir-sha256:")
    json.dumps(got.record())  # JSON as it is, for run.json


def test_batched_log_probabilities_equal_unbatched(lm_dir, items, template, own_cache) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(lm_dir)
    lengths = {len(tok(fill_prompt(template, it))["input_ids"]) for it in items}
    assert len(lengths) > 1  # a batch of these is padded
    one = answer_items(lm_dir, items, template, device="cpu", batch_size=1, use_cache=False)
    six = answer_items(lm_dir, items, template, device="cpu", batch_size=6, use_cache=False)
    np.testing.assert_allclose(six.logprob_matrix(), one.logprob_matrix(), rtol=0, atol=1e-5)
    assert six.letters == one.letters
    assert (one.computed, six.computed, one.cache_file) == (6, 6, None)
    assert not (own_cache / "behaviour").exists()  # use_cache=False writes nothing


def test_a_rerun_computes_nothing_and_never_loads_the_weights(lm_dir, items, template,
                                                               own_cache, monkeypatch) -> None:
    first = answer_items(lm_dir, items, template, device="cpu")
    assert first.computed == 6
    assert first.cache_file is not None and first.cache_file.parent == own_cache / "behaviour"

    def refuse(*a, **k):
        raise AssertionError("the weights were loaded")
    import transformers

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)
    again = answer_items(lm_dir, items, template, device="cpu")
    assert again.computed == 0
    assert again.answers == first.answers


def test_a_changed_item_alone_is_computed_again(lm_dir, items, template, own_cache) -> None:
    answer_items(lm_dir, items, template, device="cpu")
    changed = [Item(it.id, it.nc, it.sentence + " ." if k == 2 else it.sentence, it.options)
               for k, it in enumerate(items)]
    assert answer_items(lm_dir, changed, template, device="cpu").computed == 1
    assert answer_items(lm_dir, changed, template, device="cpu").computed == 0


@pytest.mark.parametrize("damage", ["truncate", "edit a value", "not utf-8"])
def test_a_damaged_cache_file_is_computed_again_with_a_warning(lm_dir, items, template,
                                                               own_cache, damage) -> None:
    first = answer_items(lm_dir, items, template, device="cpu")
    path = first.cache_file
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "edit a value":  # valid JSON, another answer: only the checksum tells
        doc = json.loads(raw)
        doc["answers"][items[0].id]["logprobs"][0] = -0.001
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        path.write_bytes(b"\xff" + raw[1:])
    with pytest.warns(BehaviourCacheWarning, match=str(path.name)):
        again = answer_items(lm_dir, items, template, device="cpu")
    assert again.computed == 6
    np.testing.assert_allclose(again.logprob_matrix(), first.logprob_matrix(), atol=1e-6)
    assert answer_items(lm_dir, items, template, device="cpu").computed == 0  # rewritten


def test_progress_goes_to_stderr(lm_dir, items, template, own_cache, capsys) -> None:
    answer_items(lm_dir, items[:2], template, device="cpu", use_cache=False, progress=True)
    out = capsys.readouterr()
    assert "answering with" in out.err and out.out == ""


# --- models that cannot answer -----------------------------------------------------------------

def test_an_encoder_is_refused(tiny_bert_dir, items, template, own_cache) -> None:
    with pytest.raises(ModelUnavailableError, match=f"{tiny_bert_dir} cannot answer the items: "
                       "it is an encoder without a language-model head"):
        answer_items(tiny_bert_dir, items, template, device="cpu")


def test_a_static_model_is_refused_without_loading_it(items, template, own_cache) -> None:
    with pytest.raises(ModelUnavailableError, match="glove-6b-50d cannot answer the items: it "
                       "is a static word-vector model.*Pass a causal LM"):
        answer_items("glove-6b-50d", items, template)


def test_a_decoder_without_its_head_is_refused(tmp_path, items, template, own_cache) -> None:
    path = tiny_byte_llama(tmp_path / "headless", head=False)
    config = json.loads((path / "config.json").read_text())
    config["architectures"] = ["LlamaForCausalLM"]  # says it has a head; its files do not
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelUnavailableError, match="lack weights the causal LM needs "
                       r"\(lm_head.weight"):
        answer_items(path, items, template, device="cpu")


def test_a_gpt2_saved_with_its_lm_head_answers(tmp_path, rows, items, template,
                                               own_cache) -> None:
    """Regression (issue 38): a saved GPT2LMHeadModel was refused ("no *ForCausalLM"): its
    class name does not end with ForCausalLM, yet AutoModelForCausalLM loads it."""
    path = tiny_gpt2(tmp_path / "gpt2")
    assert json.loads((path / "config.json").read_text())["architectures"] == [
        "GPT2LMHeadModel"]
    got = answer_items(path, items, template, device="cpu", batch_size=3)
    _, logprobs = _letter_logprobs_by_hand(path, rows, template)
    for row, lp in zip(rows, logprobs, strict=True):
        answer = got[row["id"]]
        assert answer.letter == "ABCD"[int(np.argmax(lp))]
        np.testing.assert_allclose([answer.logprobs[k] for k in "ABCD"], lp, atol=1e-5)


# --- an intervention in the forward pass (amnesic probing's behaviour) ---------------------------

@dataclass(frozen=True)
class Shift:
    """An intervention that adds 3 to every value of the states it acts on (not an eraser: what
    is checked is where it acts)."""

    layer: int
    positions: str
    fingerprint: str = "shift-by-3"

    def __call__(self, states):
        return states + 3.0


def test_an_intervention_acts_where_it_is_told(lm_dir, items, template, own_cache) -> None:
    plain = answer_items(lm_dir, items, template, device="cpu", use_cache=False)

    def lp(layer, positions):
        return answer_items(lm_dir, items, template, device="cpu", use_cache=False,
                            intervention=Shift(layer, positions)).logprob_matrix()

    # after the last block, the compound's tokens (never the prompt's last one) are seen by no
    # later position: the answers are the plain model's
    np.testing.assert_allclose(lp(2, "span"), plain.logprob_matrix(), rtol=0, atol=1e-6)
    # the last token itself, or the compound before a block attends to it, changes them
    for layer, positions in ((2, "all"), (1, "span"), (0, "span")):
        assert np.abs(lp(layer, positions) - plain.logprob_matrix()).max() > 1e-3


def test_the_empty_eraser_answers_as_the_plain_model_from_its_own_cache(
        lm_dir, items, template, own_cache) -> None:
    from ncprobe.amnesic.erase import Eraser
    from ncprobe.amnesic.forward import ForwardErasure

    plain = answer_items(lm_dir, items, template, device="cpu")
    dim = json.loads((Path(lm_dir) / "config.json").read_text())["hidden_size"]
    empty = ForwardErasure(Eraser.identity(dim), 1, "span", "nothing").intervention
    erased = answer_items(lm_dir, items, template, device="cpu", intervention=empty)
    assert np.array_equal(erased.logprob_matrix(), plain.logprob_matrix())
    assert erased.computed == len(items)  # not read from the plain model's answers
    assert erased.cache_file != plain.cache_file


def test_the_compound_tokens_cover_each_occurrence(lm_dir, items, template) -> None:
    from transformers import AutoTokenizer

    from ncprobe.ncc.behaviour import _model_inputs, _plain_ids, compound_tokens

    tok = AutoTokenizer.from_pretrained(lm_dir)
    prompts = [fill_prompt(template, it) for it in items]
    inputs = _model_inputs(tok, prompts, _plain_ids(tok, prompts), 10**6,
                           [it.id for it in items])
    flags = compound_tokens(tok, prompts, inputs, [it.nc for it in items])
    for it, prompt, ids, flag in zip(items, prompts, inputs, flags, strict=True):
        assert len(flag) == len(ids)
        # the flagged tokens, run by run, are the compound's occurrences (a byte-level BPE
        # may take a neighbouring space into a token)
        runs, cur = [], []
        for t, f in zip(ids, flag, strict=True):
            if f:
                cur.append(t)
            elif cur:
                runs.append(tok.decode(cur))
                cur = []
        if cur:
            runs.append(tok.decode(cur))
        assert len(runs) == prompt.count(it.nc)
        assert all(it.nc in r and len(r) <= len(it.nc) + 2 for r in runs), runs
