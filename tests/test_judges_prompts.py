"""Prompt files for judges.generate: MT-Bench questions, plain JSONL and CSV, bad rows."""

import json
from pathlib import Path

import pytest

from pairlab.records import RecordError
from pairlab.prompts import load_prompts


def test_mt_bench_questions_give_their_first_turn(shared_data):
    items = load_prompts(shared_data / "mt_bench" / "question.jsonl")
    assert len(items) == 80
    first = items[0]
    assert first.prompt_id == "81" and first.category == "writing"
    assert first.prompt.startswith("Compose an engaging travel blog post")
    with_reference = next(i for i in items if i.prompt_id == "101")
    assert with_reference.reference == "You are in second place."  # first turn's reference answer


def test_plain_jsonl_and_csv(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(json.dumps({"prompt": "Hi?", "id": 7, "category": "chat"}) + "\n\n"
                     + json.dumps({"prompt": "Why?", "reference": "Because."}) + "\n")
    items = load_prompts(jsonl)
    assert [(i.prompt, i.prompt_id, i.category, i.reference) for i in items] == [
        ("Hi?", "7", "chat", None), ("Why?", "3", None, "Because.")]  # no id: the line number
    csv_file = tmp_path / "p.csv"
    csv_file.write_text('prompt_id,prompt,category\na,"Say ""hi"", then stop.",chat\nb,"Two\nlines",\n')
    items = load_prompts(csv_file)
    assert [(i.prompt_id, i.prompt, i.category) for i in items] == [
        ("a", 'Say "hi", then stop.', "chat"), ("b", "Two\nlines", None)]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("p.jsonl", '{"prompt": "ok"}\n{"prompt": "unterminated\n', "p.jsonl:2: invalid JSON"),
        ("p.jsonl", '{"prompt": "ok"}\n{"text": "no prompt"}\n', "p.jsonl:2: needs a non-empty string 'prompt'"),
        ("p.jsonl", '{"turns": []}\n', "p.jsonl:1: 'turns' must be a list"),
        ("p.jsonl", '[1, 2]\n', "p.jsonl:1: expected a JSON object"),
        ("p.csv", "question\nhello\n", "p.csv:1: a CSV prompt file needs a 'prompt' column"),
        ("p.csv", 'prompt\n"fine"\n""\n', "p.csv:3: needs a non-empty string 'prompt'"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(RecordError) as info:
        load_prompts(path)
    assert message in str(info.value)


def test_skip_bad_collects_rows_and_keeps_the_rest(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "one"}\nnot json\n{"prompt": ""}\n{"prompt": "two"}\n')
    errors = []
    items = load_prompts(path, skip_bad=True, errors=errors)
    assert [i.prompt for i in items] == ["one", "two"]
    assert [e.line for e in errors] == [2, 3]


def test_every_model_pair_per_prompt_with_an_order_free_pair_id():
    from pairlab.backends.base import Completion
    from pairlab.records import make_pair_id
    from judges.generate import build_pairs
    from pairlab.prompts import PromptItem

    prompts = [PromptItem("p1", "1", "math", "ref"), PromptItem("p2", "2")]
    answers = {m: [Completion(f"{m} on {p.prompt}", 3, "stop") for p in prompts] for m in ("x", "y", "z")}
    pairs = build_pairs(prompts, answers, {"x": "fx", "y": "fy", "z": "fz"})
    assert [(p.prompt_id, p.model_a, p.model_b) for p in pairs] == [
        ("1", "x", "y"), ("1", "x", "z"), ("1", "y", "z"), ("2", "x", "y"), ("2", "x", "z"), ("2", "y", "z")]
    first = pairs[0]
    assert (first.response_a, first.family_b, first.reference, first.category) == ("x on p1", "fy", "ref", "math")
    assert first.pair_id == make_pair_id("p1", "y on p1", "x on p1")
    assert len({p.pair_id for p in pairs}) == 6


def test_an_answer_cut_by_the_length_cap_ends_at_a_sentence_and_says_so():
    from judges.generate import CUT_MARK, end_at_sentence

    assert end_at_sentence("Paris is the capital of France. It has many museums and") == \
        "Paris is the capital of France." + CUT_MARK
    # A numbered item's "3." ends no sentence; a line break does.
    assert end_at_sentence("1. Apples are red.\n2. Pears\n3. Plu") == "1. Apples are red.\n2. Pears" + CUT_MARK
    # No code block left open.
    assert end_at_sentence("Use this function.\n\n```python\nprint(largest([5, 6") == "Use this function." + CUT_MARK
    # Cutting would drop most of it: kept whole, still marked.
    assert end_at_sentence("Hi. This answer goes on and on without a single full stop") == \
        "Hi. This answer goes on and on without a single full stop" + CUT_MARK



@pytest.mark.model  # the embedded models' own tokenizers
def test_the_shipped_prompt_set_has_no_answer_cut_mid_sentence():
    # Every answer that reached the length cap (counted with its model's tokenizer) ends at a
    # sentence, or says it was cut; shorter ones ended on their own.
    import re

    from transformers import AutoTokenizer

    from pairlab.models import resolve
    from pairlab.records import read_pairs
    from pairlab.weights import prepared_dir
    from judges.generate import CUT_MARK

    data = Path(__file__).resolve().parents[1] / "data"
    manifest = json.loads((data / "prompts_pairs.manifest.json").read_text())
    sentence_end = re.compile(r"[.!?…][\"'”’)\]]*$")
    tokenizers = {m: AutoTokenizer.from_pretrained(prepared_dir(resolve(m).source)[0]) for m in manifest["models"]}
    mid_sentence = []
    for pair in read_pairs(data / "prompts_pairs.jsonl"):
        for model, text in ((pair.model_a, pair.response_a), (pair.model_b, pair.response_b)):
            cap = manifest["models"][model]["decoding"]["max_new_tokens"]
            tokenizer = tokenizers[model]
            at_cap = len(tokenizer(text, add_special_tokens=False).input_ids) >= cap - 2
            if at_cap and not (text.endswith(CUT_MARK) or sentence_end.search(text)):
                mid_sentence.append((pair.prompt_id, model, text[-40:]))
    assert mid_sentence == []
