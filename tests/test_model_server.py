"""A real round trip: arena.model_server (a subprocess over the real embedded model) and our openai client."""

import os
import socket
import subprocess
import sys
import pytest

from pairlab.backends.base import BackendError, GenerationParams
from pairlab.models import get_model
from support import answers, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "smollm2-135m-instruct"
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "arena.model_server", "--model", MODEL, "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until(answers(url + "/models", proc), 180, what="arena.model_server to answer")
    except AssertionError:
        proc.kill()
        raise AssertionError(proc.stdout.read()[-2000:]) from None
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.process  # the server fixture: arena.model_server in a process of its own
def test_openai_client_round_trip(server, smollm):
    client = get_model(f"openai:{server}#{MODEL}")
    assert client.list_models() == [MODEL]
    params = GenerationParams(max_new_tokens=20)
    # One prompt alone: the server runs the same computation as the model here.
    local = smollm.generate([QUESTION], params)[0].text
    (remote,) = client.generate([QUESTION], params)
    assert remote.text == local and remote.n_tokens > 0
    # A batch is answered row by row (its greedy text may part at a near-tie: see test_backends).
    assert all(c.n_tokens > 0 and c.text for c in client.generate([QUESTION, QUESTION], params))
    # A prompt that forces a long answer streams in pieces, which join to the generated text.
    counting = "Count: 1, 2, 3, 4, 5,"
    pieces = list(client.stream(counting, params))
    assert len(pieces) > 1 and "".join(pieces).strip() == client.generate([counting], params)[0].text
    # Scoring through /completions with echo matches the local scoring call.
    context = smollm.render(QUESTION) + "The capital of France is"
    remote_scores = client.score([context], [" Paris", " London"])[0]
    local_scores = smollm.score([context], [" Paris", " London"])[0]
    assert remote_scores == pytest.approx(local_scores, abs=1e-3)
    assert remote_scores[0] > remote_scores[1]


@pytest.mark.model
@pytest.mark.process
def test_unknown_model_is_refused(server):
    client = get_model(f"openai:{server}#other-model")
    with pytest.raises(BackendError, match="HTTP 404"):
        client.generate([QUESTION], GenerationParams(max_new_tokens=4))


def test_unreachable_server_retries_then_fails():
    client = get_model(f"openai:http://127.0.0.1:{_free_port()}/v1#x", retries=2, backoff=0.01)
    with pytest.raises(BackendError, match="after 3 tries"):
        client.generate(["hi"], GenerationParams(max_new_tokens=4))
