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
