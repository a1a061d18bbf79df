"""Rate limits per session, per address and overall; the client's address behind proxies; signed sessions."""

import pytest

from arena.errors import RateLimited
from arena.limits import Limits, client_address
from arena.sessions import SessionSigner


def test_each_limit_holds_on_its_own_and_the_global_one_across_everyone():
    limits = Limits(per_session=3, per_address=5, new_sessions=2, overall=9, window_s=60)
    for _ in range(3):
        limits.check("s1", "1.1.1.1")
    with pytest.raises(RateLimited, match="this session"):
        limits.check("s1", "1.1.1.1")
    limits.check("s2", "1.1.1.1")  # a new session of the same address: 5 actions in all
    with pytest.raises(RateLimited, match="network address"):
        limits.check("s3", "1.1.1.1")
    limits.check_new_session("2.2.2.2")
    limits.check_new_session("2.2.2.2")
    with pytest.raises(RateLimited, match="new sessions"):
        limits.check_new_session("2.2.2.2")
    # Refused attempts spent nothing of the shared budget: 3 + 1 + 2 = 6 of 9 so far.
    for i in range(3):
        limits.check(f"s{10 + i}", f"5.5.5.{i}")
    with pytest.raises(RateLimited, match="everyone"):
        limits.check("s20", "6.6.6.6")


def test_only_the_server_signs_sessions():
    signer = SessionSigner(b"k" * 32)
    token = signer.issue()
    assert signer.verify(token) == token and signer.issue() != token
    raw, mac = token.split(".")
    assert signer.verify(f"{raw}x.{mac}") is None and signer.verify(f"{raw}.{'0' * len(mac)}") is None
    assert SessionSigner(b"other" * 8).verify(token) is None
    assert signer.verify("made-up") is None and signer.verify(None) is None and signer.verify("a.b.c") is None


def test_the_client_address_is_the_peer_unless_a_trusted_proxy_forwarded_it():
    assert client_address("1.2.3.4", "9.9.9.9", ()) == "1.2.3.4"  # nobody trusted: the header is ignored
    assert client_address("1.2.3.4", "9.9.9.9", ("10.0.0.1",)) == "1.2.3.4"  # not from the proxy
    assert client_address("10.0.0.1", "9.9.9.9", ("10.0.0.1",)) == "9.9.9.9"
    # Whatever a client wrote sits on the left; the nearest hop our proxies did not add is the client.
    assert client_address("10.0.0.1", "6.6.6.6, 9.9.9.9, 10.0.0.2", ("10.0.0.1", "10.0.0.2")) == "9.9.9.9"
    assert client_address("10.0.0.1", None, ("10.0.0.1",)) == "10.0.0.1"


def test_an_ipv6_client_is_its_64_and_a_mapped_ipv4_address_is_the_ipv4_one():
    one = client_address("2001:db8:1:2:aaaa::1", None, ())
    assert one == client_address("2001:db8:1:2:ffff:ffff:ffff:ffff", None, ()) == "2001:db8:1:2::/64"
    assert client_address("2001:db8:1:3::1", None, ()) != one  # the next /64 is another client
    assert client_address("::ffff:10.1.2.3", None, ()) == client_address("10.1.2.3", None, ()) == "10.1.2.3"
    # The same through a trusted proxy (which may itself be written either way), and for the
    # address every limit, daily budget and hygiene flag is keyed by.
    assert client_address("::ffff:10.0.0.1", "2001:db8:1:2::5", ("10.0.0.1",)) == one
    assert client_address("10.0.0.1", "::ffff:9.9.9.9", ("10.0.0.1",)) == "9.9.9.9"
    assert client_address("10.0.0.1", "not-an-address", ("10.0.0.1",)) == "not-an-address"


ROUTES = [("GET", "/"), ("GET", "/leaderboard/"), ("GET", "/gradio_api/info"), ("GET", "/openapi.json"),
          ("GET", "/gradio_api/startup-events"), ("POST", "/gradio_api/stream/x"), ("GET", "/config"),
          ("POST", "/arena-api/votes"), ("GET", "/arena-api/status"), ("POST", "/gradio_api/queue/join")]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from fastapi.testclient import TestClient

    from arena.battles import Arena
    from arena.config import ArenaConfig
    from arena.store import VoteStore
    from arena.web import build_app

    config = ArenaConfig(db=f"sqlite:///{tmp_path_factory.mktemp('limits') / 'votes.db'}", address_requests=5,
                         trusted_proxies=("testclient",))  # TestClient's peer, so each request names its address
    store = VoteStore(config.db)
    with TestClient(build_app(Arena(config, store, {}))) as client:
        yield client
    store.close()


@pytest.mark.parametrize("route", range(len(ROUTES)))
def test_every_route_is_limited_per_address_and_a_64_is_one_address(served, route):
    method, path = ROUTES[route]

    def code(address: str) -> int:
        return served.request(method, path, headers={"X-Forwarded-For": address}).status_code

    # Five requests from addresses of one /64 ...
    first = [code(f"2001:db8:{route}:7::{i + 1}") for i in range(5)]
    # ... then the sixth, from yet another address of it, is refused
    assert 429 not in first and code(f"2001:db8:{route}:7:abcd::9") == 429, first
    assert code(f"2001:db8:{route}:8::1") != 429  # another /64 is another client
    assert 429 not in [code(f"::ffff:10.9.9.{route}") for _ in range(5)]
    assert code(f"10.9.9.{route}") == 429  # ::ffff:10.9.9.x was 10.9.9.x
