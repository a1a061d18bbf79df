"""A battle waiting for admission knows its place in line, and every limit of the line holds."""

import asyncio
import threading

import pytest
from support import wait_until
from test_arena_api import app  # noqa: F401  (the API on a real SQLite file, no models)

from arena.errors import RateLimited
from arena.slots import Slot, Slots


def test_waiting_battles_see_their_place_move_up_as_places_free():
    async def scenario():
        slots = Slots(1, max_waiting=4, per_address=2, per_session=1)
        held = await slots.wait("first", "10.0.0.1")
        second = slots.line_up("second", "10.0.0.2")
        third = slots.line_up("third", "10.0.0.3")
        assert await anext(second) == 1
        assert await anext(third) == 2
        assert (slots.place("second"), slots.place("third"), slots.place("first")) == (1, 2, None)
        with pytest.raises(RateLimited):  # one waiting battle per session, places or not
            await slots.wait("third", "10.0.0.4")
        slots.release(held)
        granted = await anext(second)
        assert isinstance(granted, Slot) and granted.granted.is_set()
        assert await anext(third) == 1  # moved up when the one before it was admitted
        await third.aclose()  # a visitor who leaves gives the place up
        assert slots.counts() == (1, 0) and slots.place("third") is None
        slots.release(granted)
        assert slots.counts() == (0, 0)

    asyncio.run(scenario())


def test_status_tells_a_waiting_visitor_its_place(app):  # noqa: F811
    client, arena = app
    client.post("/arena-api/battles")  # a session cookie, as a visitor who played before
    token = client.cookies["arena_session"]
    assert "place" not in client.get("/arena-api/status").json()
    held = arena.slots.acquire("someone else")  # as a battle generating
    waiter = threading.Thread(target=lambda: arena.slots.release(arena.slots.acquire(token)))
    waiter.start()
    wait_until(lambda: arena.slots.counts() == (1, 1), timeout=10, what="the visitor's battle in line")
    assert client.get("/arena-api/status").json() == {"generating": 1, "waiting": 1, "place": 1}
    arena.slots.release(held)
    waiter.join(timeout=10)
    assert client.get("/arena-api/status").json() == {"generating": 0, "waiting": 0}
