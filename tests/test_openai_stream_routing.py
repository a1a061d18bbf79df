"""An openai: model with several endpoints streams each request from the least-loaded one."""

import httpx

from pairlab.backends.base import GenerationParams
from pairlab.backends.openai_client import OpenAIModel

SSE = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n'


def test_concurrent_streams_go_to_the_endpoint_with_fewest_in_flight():
    model = OpenAIModel("m", ["http://one:8000/v1", "http://two:8000/v1"], "m")
    served = []
    for endpoint in model.pool.endpoints:
        def answer(request, url=endpoint.url):
            served.append(url)
            return httpx.Response(200, content=SSE)
        endpoint.clients = [httpx.Client(base_url=endpoint.url, transport=httpx.MockTransport(answer))]
    params = GenerationParams(max_new_tokens=4)
    first = model.stream("Hello", params)
    assert next(first) == "hi"  # still open: one request in flight on its endpoint
    assert list(model.stream("Hello", params)) == ["hi"]
    assert list(first) == []
    assert sorted(served) == ["http://one:8000/v1", "http://two:8000/v1"]
    assert [e.in_flight for e in model.pool.endpoints] == [0, 0]
    model.close()
