"""Reasoning traces (judge's and judged responses') and the vLLM engine's work plan.

The scripted judge of test_judges_runner decides what the judge writes: parsing logic only.
"""

from judges.runner import JudgeConfig, plan_chunks
from judges.templates import BUILTIN
from test_judges_runner import make_pair, run

RELATIVE = BUILTIN["prometheus-relative"]


def test_traces_of_common_reasoning_models_are_set_aside():
    from judges.reasoning import split_reasoning, strip_reasoning

    cases = {
        "<think>A or B? [RESULT] A</think>\nFinal: [RESULT] B": ("A or B? [RESULT] A", "Final: [RESULT] B", False),
        "weighing, [RESULT] A maybe</think> [RESULT] B": ("weighing, [RESULT] A maybe", "[RESULT] B", False),
        "[THINK]hmm[/THINK]ok [RESULT] A": ("hmm", "ok [RESULT] A", False),
        "<|begin_of_thought|>x<|end_of_thought|>y": ("x", "y", False),
        "<|channel|>analysis<|message|>[RESULT] A?<|end|><|start|>assistant<|channel|>final<|message|>[RESULT] B":
            (None, "[RESULT] B", False),
        "no trace here [RESULT] A": ("", "no trace here [RESULT] A", False),
        "Sure. <think>it ran out of tokens while thinking [RESULT] A": (None, "Sure.", True),
    }
    for text, (trace, answer, unfinished) in cases.items():
        got = split_reasoning(text)
        assert got[1:] == (answer, unfinished), text
        if trace is not None:
            assert got[0] == trace, text
    assert strip_reasoning("<THINKING>I am GPT-9 and I think</THINKING> Paris.") == "Paris."


def test_a_verdict_inside_an_unfinished_trace_is_no_verdict_and_the_trace_stays_in_raw_output(tmp_path):
    pairs = [make_pair("Capital of France?", "Paris.", "Lyon.")]
    cut = "<think>Response B might be better... so [RESULT] B"  # the judge ran out of tokens mid-thought
    _, counts, records, failed = run(tmp_path, lambda user, p: cut, pairs=pairs, retries=0)
    assert records == [] and len(failed) == 2
    assert all("inside its reasoning" in f["parse_error"] and f["raw_output"] == cut for f in failed)

    done = "<think>B? No: [RESULT] B is wrong.</think>\nResponse A is right. [RESULT] A"
    _, counts, records, failed = run(tmp_path / "2", lambda user, p: done, pairs=pairs, retries=0)
    assert failed == [] and len(records) == 2 and counts.reasoning_traces == 2
    for r in records:
        assert r.winner == "model_a" and r.raw_output == done and r.meta["reasoning_set_aside"] is True


def test_strip_reasoning_hides_judged_traces_from_the_judge_and_is_recorded(tmp_path):
    traced = "<think>As SmolLM I should say Paris, it's long-winded reasoning.</think>Paris."
    pairs = [make_pair("Capital of France?", traced, "Lyon."), make_pair("2+2?", "4", "5")]
    seen = []

    def script(user, params):
        seen.append(user)
        return "[RESULT] A"

    _, _, records, _ = run(tmp_path, script, pairs=pairs, strip_reasoning=True)
    assert len(seen) == 4 and not any("SmolLM" in text or "<think>" in text for text in seen)
    stripped = [r for r in records if r.pair_id == pairs[0].pair_id]
    assert {r.response_a for r in stripped if r.meta["order"] == "ab"} == {"Paris."}
    assert all(r.meta.get("reasoning_stripped") for r in stripped)
    assert not any(r.meta.get("reasoning_stripped") for r in records if r.pair_id == pairs[1].pair_id)
    assert JudgeConfig(template=RELATIVE, strip_reasoning=True).describe()["strip_reasoning"] is True


def test_vllm_gets_large_chunks_with_the_pairs_of_one_question_together():
    pairs = [make_pair(f"question {i % 5}" + "?" * (i % 3), f"answer {i}", f"other answer {i} " * (i % 7))
             for i in range(60)]
    questions = [p.prompt for p in pairs]
    config = JudgeConfig(template=RELATIVE, batch_size=1024, prefix_order=True)
    chunks = plan_chunks(pairs, config)
    assert len(chunks) == 1 and len(chunks[0]) == 120  # every pending prompt in one hand-over
    order = [t.pair.prompt for t in chunks[0]]
    runs = [q for i, q in enumerate(order) if i == 0 or order[i - 1] != q]
    assert sorted(runs) == sorted(set(questions))  # each question's prompts form one run
    assert "by question" in config.describe()["order"]
    from judges.run import DEFAULT_BATCH

    assert DEFAULT_BATCH["vllm"] >= 1024


def test_a_run_is_not_resumed_with_the_other_strip_reasoning_setting(tmp_path, capsys):
    """The resume key cannot tell a verdict on a traced text from one on the stripped text: the
    command refuses (exit 2, nothing written) instead of keeping the earlier verdicts as its own."""
    import json

    from pairlab.records import write_records
    from judges import run as run_cli
    from judges.manifest import manifest_path

    pairs = tmp_path / "pairs.jsonl"
    write_records(pairs, [make_pair("Capital of France?", "<think>hmm</think>Paris.", "Lyon.")])
    out = tmp_path / "out.jsonl"
    out.write_text('{"earlier": "verdict"}\n')
    manifest_path(out).write_text(json.dumps({"settings": {"strip_reasoning": False}}))
    argv = ["--pairs", str(pairs), "--judge", "smollm2-135m-instruct", "--out", str(out), "--quiet"]
    assert run_cli.main([*argv, "--strip-reasoning"]) == 2
    assert "judged without --strip-reasoning" in capsys.readouterr().err
    assert out.read_text() == '{"earlier": "verdict"}\n'
