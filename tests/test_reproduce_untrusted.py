"""A manifest is untrusted input: ``judges.run --reproduce`` says what it would do and refuses a
forged one before anything runs. A forged manifest that names a server judge on a loopback
server recording what it receives, and a private file outside the manifest's folder and the
working folder, sends that server nothing (no API key, no file text); a manifest whose command
asks for help, or judges nothing, is refused instead of reported as reproduced.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from judges.run import main
from judges.templates import get_template

SECRET = "SECRET-PAIR-TEXT"
KEY = "sk-never-leaves-this-machine"


@pytest.fixture
def listener():
    """A server on 127.0.0.1 that records every request it receives (and answers 404)."""
    received: list[dict] = []

    class Recorder(BaseHTTPRequestHandler):
        def _record(self):
            length = int(self.headers.get("Content-Length") or 0)
            received.append({"path": self.path, "headers": dict(self.headers),
                             "body": self.rfile.read(length).decode("utf-8", "replace")})
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _record

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", received
    finally:
        server.shutdown()
        server.server_close()


def _forge(folder: Path, argv: list[str]) -> Path:
    """A manifest as judges.run writes one (the template's true hash, a records file beside it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.jsonl").write_text("")
    manifest = folder / "run.manifest.json"
    manifest.write_text(json.dumps({
        "version": 1, "command": ["python", "-m", "judges.run", *argv],
        "template": {"name": "prometheus-relative", "sha256": get_template("prometheus-relative").sha256},
        "outputs": {"records": "run.jsonl"}, "inputs": {"sha256": "0"}}))
    return manifest


def _private_pairs(tmp_path: Path) -> Path:
    private = tmp_path / "private" / "pairs.jsonl"
    private.parent.mkdir()
    private.write_text(json.dumps({"pair_id": "p", "prompt": SECRET, "model_a": "x", "model_b": "y",
                                   "response_a": SECRET, "response_b": "b"}) + "\n")
    return private


@pytest.fixture
def forged(tmp_path, listener, monkeypatch):
    """(manifest, server URL, what the server received): a manifest that sends a private file
    outside its folder to the loopback server, run from the manifest's folder with a key set."""
    url, received = listener
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    manifest = _forge(tmp_path / "run", ["--pairs", str(_private_pairs(tmp_path)), "--judge", f"openai:{url}#x",
                                         "--out", "run.jsonl"])
    monkeypatch.chdir(tmp_path / "run")
    return manifest, url, received


def test_a_forged_manifest_naming_a_server_sends_it_nothing(forged, capsys):
    manifest, url, received = forged
    assert main(["--reproduce", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert received == []
    assert "refused" in err and url in err and "OPENAI_API_KEY" in err and "--trust-manifest" in err
    assert "outside its folder" in err and "private/pairs.jsonl" in err  # said before anything runs
    assert err.strip().splitlines()[-1].count("error:") == 1


def test_the_confirmation_is_what_lets_it_run(forged, capsys):
    """The same manifest with --trust-manifest does reach the server: the refusal above is the gate."""
    manifest, url, received = forged
    main(["--reproduce", str(manifest), "--trust-manifest"])
    assert received


def test_a_file_outside_what_the_user_named_is_refused_for_a_local_judge_too(tmp_path, monkeypatch, capsys):
    manifest = _forge(tmp_path / "run", ["--pairs", str(_private_pairs(tmp_path)), "--judge",
                                         "smollm2-135m-instruct", "--out", "run.jsonl"])
    monkeypatch.chdir(tmp_path / "run")
    assert main(["--reproduce", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "refused" in err and "reads pairs" in err and "server" not in err.split("refused", 1)[1]


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["--he"], [], ["--judge", "smollm2-135m-instruct"],
                                  ["--reproduce", "other.manifest.json"]])
def test_a_manifest_that_judges_nothing_is_refused(tmp_path, monkeypatch, capsys, argv):
    manifest = _forge(tmp_path / "run", argv)
    monkeypatch.chdir(tmp_path / "run")
    assert main(["--reproduce", str(manifest)]) == 2
    out, err = capsys.readouterr()
    assert "judges nothing" in err and "identical" not in out and "usage" not in out


def test_pairs_the_user_names_are_not_refused(tmp_path, monkeypatch):
    """The user's own --pairs replaces the manifest's path: a file the user named is not 'outside'."""
    from judges.run import _manifest_run, _untrusted, build_parser

    private = _private_pairs(tmp_path)
    manifest = _forge(tmp_path / "run", ["--pairs", str(private), "--judge", "smollm2-135m-instruct",
                                         "--out", "run.jsonl"])
    monkeypatch.chdir(tmp_path / "run")
    body = json.loads(manifest.read_text())
    for given, refused in ((None, True), (str(private), False)):
        args = build_parser().parse_args(["--reproduce", str(manifest)] + (["--pairs", given] if given else []))
        run = _manifest_run(manifest, body["command"][3:])
        run.pairs = args.pairs or run.pairs
        assert (_untrusted(args, manifest, body, run) is not None) == refused
