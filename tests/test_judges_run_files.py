"""Output files of a judge run: torn-tail repair, keys of work already done, bad lines, locking."""

import json

import pytest

from pairlab.records import RecordError
from judges.run_files import OutputLocked, RunFiles, repair_tail, task_key


def line(pair_id, order="ab", judge="j", sha="t", mode="logprob", **extra):
    record = {"pair_id": pair_id, "prompt": "p", "model_a": "x", "model_b": "y", "response_a": "1",
              "response_b": "2", "winner": "model_a", "judge": judge,
              "meta": {"order": order, "template_sha256": sha, "mode": mode}, **extra}
    return json.dumps(record) + "\n"


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        (b"", b""),
        (b'{"a": 1}\n', b'{"a": 1}\n'),
        (b'{"a": 1}\n{"b": ', b'{"a": 1}\n'),
        (b'{"tor', b""),
        (b'{"a": 1}\n{"b": 2}\n{"c": "\xc3', b'{"a": 1}\n{"b": 2}\n'),  # torn inside a UTF-8 character
    ],
)
def test_repair_tail_cuts_only_a_torn_last_line(tmp_path, content, kept):
    path = tmp_path / "out.jsonl"
    path.write_bytes(content)
    assert repair_tail(path) == len(content) - len(kept)
    assert path.read_bytes() == kept


def test_done_keys_come_from_both_files_and_ignore_foreign_lines(tmp_path):
    out = tmp_path / "out.jsonl"
    human = {"pair_id": "h", "prompt": "p", "model_a": "x", "model_b": "y", "response_a": "1",
             "response_b": "2", "winner": "tie", "judge": "human"}
    out.write_text(line("p1") + line("p1", "ba") + json.dumps(human) + "\n" + line("p2", mode="generate"))
    (tmp_path / "out.failures.jsonl").write_text(line("p3", "ba"))
    messages = []
    with RunFiles(out, log=messages.append) as files:
        assert set(files.done) == {task_key("p1", "ab", "j", "t", "logprob"), task_key("p1", "ba", "j", "t", "logprob"),
                                   task_key("p2", "ab", "j", "t", "generate")}
        assert set(files.done.values()) == {"model_a"}
        assert files.seen(task_key("p3", "ba", "j", "t", "logprob"))
        assert not files.seen(task_key("p2", "ab", "j", "t", "logprob"))  # other mode: not the same work
    assert messages == []


def test_torn_tail_is_reported_and_removed_on_open(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text(line("p1") + line("p2")[:25])
    messages = []
    with RunFiles(out, log=messages.append) as files:
        assert set(files.done) == {task_key("p1", "ab", "j", "t", "logprob")}
    assert out.read_text() == line("p1")
    assert len(messages) == 1 and "incomplete last line" in messages[0] and str(out) in messages[0]


def test_a_corrupt_complete_line_is_an_error_naming_file_and_line(tmp_path):
    out = tmp_path / "out.jsonl"
    content = line("p1") + "not json\n" + line("p2")
    out.write_text(content)
    with pytest.raises(RecordError, match=r"out\.jsonl:2: invalid JSON"):
        with RunFiles(out):
            pass
    assert out.read_text() == content  # nothing lost


def test_a_second_writer_is_refused(tmp_path):
    out = tmp_path / "out.jsonl"
    with RunFiles(out):
        with pytest.raises(OutputLocked, match="another judges.run"):
            with RunFiles(out):
                pass
    with RunFiles(out):  # released on exit
        pass
