"""Live battles on the two real embedded models: streaming, turns, regenerate, named mode."""

import dataclasses
import random
import sqlite3

import pytest
from support import wait_until

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.errors import NotReady, Refused, UnknownBattle
from pairlab.backends.base import GenerationParams

pytestmark = pytest.mark.model


@pytest.fixture
def arena(tmp_path, smollm, gemma):
    config = ArenaConfig(db=f"sqlite:///{tmp_path / 'votes.db'}", max_turns=2, rate_limit=100,
                         params=GenerationParams(max_new_tokens=12, temperature=0.7, top_p=0.9))
    from arena.store import VoteStore

    store = VoteStore(config.db)
    # A seeded draw of sides and sampling seeds: what these tests see is the same every run
    # (an unseeded 12-token sample can be empty, which once failed an assertion by chance).
    yield Arena(config, store, {smollm.id: smollm, gemma.id: gemma}, rng=random.Random(20261123))
    store.close()


def run(arena, battle):
    updates = list(arena.stream(battle))
    assert updates and updates[-1] == (battle.turns[-1].response_a, battle.turns[-1].response_b)
    return updates


def test_battle_streams_both_panes_and_records_what_was_shown(arena):
    battle = arena.start("s", "What is the capital of France?")
    assert set(battle.models) == set(arena.models) and battle.anony and battle.state == "streaming"
    with pytest.raises(NotReady):
        arena.vote("s", battle.id, "a")
    run(arena, battle)
    turn = battle.turns[0]
    assert turn.response_a and turn.response_b and battle.state == "ready"
    assert arena.decoding() == 0  # both answers ended
    assert 0 < turn.latency["ttft_a"] <= turn.latency["total_a"]
    assert 0 < turn.latency["ttft_b"] <= turn.latency["total_b"]
    record = arena.vote("s", battle.id, "tie")
    assert (record.model_a, record.model_b) == battle.models
    assert (record.response_a, record.response_b) == (turn.response_a, turn.response_b)
    assert record.meta["params"]["max_new_tokens"] == 12 and record.meta["seeds"] == [turn.seed]
    assert record.meta["mode"] == "battle" and record.turn == 1
    with pytest.raises(Refused, match="voted"):
        arena.follow_up("s", battle, "And of Italy?")


def test_multi_turn_up_to_the_limit_then_regenerate(arena):
    battle = arena.start("s", "Say hello.")
    run(arena, battle)
    arena.follow_up("s", battle, "Now say goodbye.")
    assert battle.messages("a")[1] == {"role": "assistant", "content": battle.turns[0].response_a}
    run(arena, battle)
    with pytest.raises(Refused, match="limit of 2 turns"):
        arena.follow_up("s", battle, "A third turn.")
    first_seed = battle.turns[-1].seed
    arena.regenerate("s", battle)
    assert battle.turns[-1].seed != first_seed and battle.turns[-1].response_a == ""
    run(arena, battle)
    record = arena.vote("s", battle.id, "b")
    assert record.turn == 2 and record.prompt == "Now say goodbye." and record.meta["regenerations"] == 1
    assert [m["content"] for m in record.conversation["model_a"][::2]] == ["Say hello.", "Now say goodbye."]
    assert record.conversation["model_b"][-1]["content"] == record.response_b


def test_named_side_by_side_is_stored_but_not_ratable(arena):
    names = sorted(arena.models)
    battle = arena.start("s", "Name a fruit.", models=names)
    assert battle.models == tuple(names) and not battle.anony
    run(arena, battle)
    record = arena.vote("s", battle.id, "a")
    assert record.meta["anony"] is False and record.meta["mode"] == "side_by_side"
    assert arena.store.records(ratable=True) == [] and len(arena.store.records()) == 1


def test_prompts_are_checked_before_anything_runs(arena):
    with pytest.raises(Refused, match="Type a prompt"):
        arena.start("s", "   ")
    with pytest.raises(Refused, match=f"limit is {arena.config.max_prompt_chars}"):
        arena.start("s", "x" * (arena.config.max_prompt_chars + 1))
    with pytest.raises(Refused, match="two different models"):
        arena.start("s", "Hi", models=["smollm2-135m-instruct", "smollm2-135m-instruct"])
    assert arena.current("s", "battle") is None and arena.store.count_votes() == 0


def test_both_panes_grow_at_one_pace_whichever_model_is_faster(arena):
    battle = arena.start("s", "Write two sentences about the sea.")
    updates = run(arena, battle)
    final_a, final_b = updates[-1]
    assert len(updates) > 2
    for a, b in updates[:-1]:
        # Equal lengths, unless the shorter pane already shows its whole answer.
        assert len(a) == len(b) or (len(a) < len(b) and a.strip() == final_a) \
            or (len(b) < len(a) and b.strip() == final_b), (a, b)


def test_when_done_shows_nothing_until_both_answers_end(arena):
    arena.config = dataclasses.replace(arena.config, reveal="when_done")
    battle = arena.start("s", "Name three colours.")
    updates = run(arena, battle)
    # Nothing at all while either model runs, then both whole answers at once.
    assert all(update == ("", "") for update in updates[:-1]) and any(updates[-1])


def test_another_sessions_streaming_battle_is_unknown_not_busy(arena):
    battle = arena.start("s", "Say hi.")
    assert battle.state == "streaming"
    with pytest.raises(UnknownBattle, match="not served to you"):
        arena.vote("intruder", battle.id, "a")
    with pytest.raises(NotReady):
        arena.vote("s", battle.id, "a")


def test_a_dropped_connection_fails_the_battle_and_no_vote_lands_on_the_earlier_turn(arena):
    battle = arena.start("s", "Count to three.")
    run(arena, battle)
    arena.follow_up("s", battle, "Now count to ten, slowly, with words.")
    stream = arena.stream(battle)
    next(stream)
    stream.close()  # the page went away mid-answer
    assert battle.state == "failed"
    with pytest.raises(NotReady, match="failed"):
        arena.vote("s", battle.id, "a")
    arena.forget("s")  # memory gone: the store alone must refuse it too
    with pytest.raises(NotReady, match="failed"):
        arena.vote("s", battle.id, "a")
    assert arena.store.count_votes() == 0
    assert arena.slots.free == arena.slots.size  # the dropped stream gave its slot back
    wait_until(lambda: arena.decoding() == 0, timeout=30, what="both models to stop")


def test_a_failed_save_leaves_the_battle_failed_not_votable_on_the_stored_turn(arena, tmp_path):
    battle = arena.start("s", "Say yes.")
    run(arena, battle)
    arena.follow_up("s", battle, "Say no.")
    con = sqlite3.connect(tmp_path / "votes.db", timeout=30)
    con.execute("CREATE TRIGGER refuse BEFORE UPDATE ON battles BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    con.commit()
    with pytest.raises(Refused, match="could not be saved"):
        list(arena.stream(battle))
    assert battle.state == "failed"
    with pytest.raises(NotReady, match="failed"):
        arena.vote("s", battle.id, "a")
    assert arena.store.count_votes() == 0


def test_a_regenerated_answer_keeps_the_leak_of_the_answer_it_replaced(arena):
    battle = arena.start("s", "Say hello.")
    run(arena, battle)
    battle.leaks = {"a": ["gemma3"], "b": []}  # what the first answer named (as the first finish found it)
    arena.regenerate("s", battle)
    run(arena, battle)
    assert "gemma3" in battle.leaks["a"]
    assert arena.vote("s", battle.id, "a").meta["identity_leak"] is True


def test_a_wiretap_sees_both_panes_at_one_pace_to_the_end(tmp_path, smollm, gemma):
    # When one model ends first, the other pane must not jump to its backlog (or race on at
    # its own model's pace): every frame, the last included, grows a few characters at most.
    from arena.store import VoteStore

    config = ArenaConfig(db=f"sqlite:///{tmp_path / 'votes.db'}", rate_limit=100,
                         params=GenerationParams(max_new_tokens=64, temperature=0.7, top_p=0.9))
    store = VoteStore(config.db)
    arena = Arena(config, store, {smollm.id: smollm, gemma.id: gemma}, rng=random.Random(7))
    try:
        for prompt in ("Write a short poem about the sea.", "List five fruits.", "Explain rain to a child."):
            battle = arena.start("s", prompt)
            frames = [(0, 0), *((len(a), len(b)) for a, b in run(arena, battle))]
            jumps = [max(now[0] - before[0], now[1] - before[1]) for before, now in zip(frames, frames[1:])]
            assert max(jumps) <= 40, (prompt, jumps)
    finally:
        store.close()
