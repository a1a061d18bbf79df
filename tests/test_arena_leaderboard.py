"""The leaderboard tab's numbers from a real store: BT ratings with CIs, matrices, exclusions."""

import dataclasses

from app_process import ROOT
import pytest

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.leaderboard import compute
from arena.sessions import Voter
from arena.store import VoteStore

PAIRS = ROOT / "data" / "prompts_pairs.jsonl"


@pytest.fixture
def arena(tmp_path):
    # A logged-in voter's first vote on a pair counts; these tests vote as one voter per battle.
    store = VoteStore(f"sqlite:///{tmp_path / 'votes.db'}", prompt_set_rated=True)
    yield Arena(ArenaConfig(db=store.url, pairs=PAIRS, rate_limit=10_000), store, {})
    store.close()


def test_empty_store_says_so(arena):
    board = compute(arena.store, bootstrap=10)
    assert board.summary.startswith("No rated votes yet") and board.ratings.empty


def test_ratings_and_matrices_from_rated_votes_only(arena):
    favourite = arena.pairs[0].model_a
    for i in range(40):
        battle = arena.serve_pair(Voter(f"voter-{i}", authenticated=True))
        # the favourite wins 3 of 4 battles, whichever side it was shown on
        choice = ("a" if battle.models[0] == favourite else "b") if i % 4 else "tie"
        arena.vote(Voter(f"voter-{i}", authenticated=True), battle.id, choice)
    someone = Voter("s", authenticated=True)
    named = dataclasses.replace(arena.serve_pair(someone), id="named-battle", mode="side_by_side")
    arena.store.save_battle(named.to_payload())
    arena.vote(someone, named.id, "b")

    board = compute(arena.store, bootstrap=50)
    assert "40 rated votes; 1 more stored but not rated" in board.summary and board.method == "mle"
    table = board.ratings.set_index("model")
    other = next(m for m in table.index if m != favourite)
    assert table.loc[favourite, "rating"] > table.loc[other, "rating"] and table.loc[favourite, "rank (UB)"] == 1
    assert ((table["lower"] <= table["rating"]) & (table["rating"] <= table["upper"])).all()
    assert (table["votes"] == 40).all() and "style-controlled" in table.columns
    rates = board.win_rates.set_index("model")
    assert rates.loc[favourite, other] == pytest.approx((30 + 5) / 40)
    assert rates.loc[favourite, other] + rates.loc[other, favourite] == pytest.approx(1)
    assert board.counts.set_index("model").loc[favourite, other] == 40


def test_first_vote_shows_counts_and_a_labelled_regularised_estimate(arena):
    voter = Voter("first-voter", authenticated=True)
    battle = arena.serve_pair(voter)
    arena.vote(voter, battle.id, "a")
    board = compute(arena.store, bootstrap=50)  # used to raise "did not converge ... pass l2 > 0"
    assert board.method == "regularised" and "Early estimate, needs more votes" in board.summary
    assert "Regularised estimate" in board.summary  # behind "How these numbers are computed"
    assert "Gaussian prior (SD 174 Elo" in board.summary
    winner, loser = battle.models
    counts = board.models.set_index("model")
    assert counts.loc[winner].tolist() == [1, 1, 0, 0] and counts.loc[loser].tolist() == [1, 0, 0, 1]
    assert board.counts.set_index("model").loc[winner, loser] == 1
    table = board.ratings.set_index("model")
    # shrunk, not infinite: the winner leads by a finite margin, inside its own interval
    assert 1000 < table.loc[winner, "rating"] < 1000 + 174 and table.loc[loser, "rating"] < 1000
    # one vote is one pair: no interval and no rank claimed (issue 30: "surely better" after two votes)
    assert table["lower"].isna().all() and table["upper"].isna().all() and table["rank (UB)"].isna().all()
    assert "No ranges or ranks yet" in board.summary


def test_all_wins_one_way_is_regularised_and_a_tie_makes_the_mle_exist(arena):
    favourite = arena.pairs[0].model_a
    for i in range(5):
        voter = Voter(f"v{i}", authenticated=True)
        battle = arena.serve_pair(voter)
        arena.vote(voter, battle.id, "a" if battle.models[0] == favourite else "b")
    assert compute(arena.store, bootstrap=20).method == "regularised"
    voter = Voter("tie-voter", authenticated=True)
    battle = arena.serve_pair(voter)
    arena.vote(voter, battle.id, "tie")
    board = compute(arena.store, bootstrap=20)
    assert board.method == "mle" and "maximum-likelihood" in board.summary
    # six votes on a few pairs: ratings, but no rank claimed yet
    assert board.ratings["rank (UB)"].isna().all() and "No ranges or ranks yet" in board.summary


def test_one_model_only_needs_more_votes(tmp_path):
    from arena.leaderboard import NEEDS_MORE, ratings

    table, method, note = ratings([])
    assert table.empty and method == "none" and note == NEEDS_MORE


def test_mle_exists_follows_ford():
    from analysis.ratings import aggregate, mle_exists

    def exists(battles):
        a, b, w = zip(*battles)
        return mle_exists(aggregate(list(a), list(b), list(w)))

    assert not exists([("x", "y", "model_a")])
    assert exists([("x", "y", "model_a"), ("x", "y", "model_b")])
    assert exists([("x", "y", "tie")])
    # a cycle x > y > z > x is strongly connected; a chain x > y > z is not
    assert exists([("x", "y", "model_a"), ("y", "z", "model_a"), ("z", "x", "model_a")])
    assert not exists([("x", "y", "model_a"), ("y", "z", "model_a"), ("x", "z", "model_a"), ("z", "y", "model_a")])
def test_prompt_set_votes_count_once_per_logged_in_voter_and_pair_and_not_at_all_by_default(tmp_path):
    pairs = ROOT / "data" / "prompts_pairs.jsonl"
    stuffer, other = Voter("user:stuffer", authenticated=True), Voter("user:other", authenticated=True)
    for rated in (True, False):
        store = VoteStore(f"sqlite:///{tmp_path / f'{rated}.db'}", prompt_set_rated=rated)
        arena = Arena(ArenaConfig(db=store.url, pairs=pairs, rate_limit=10_000), store, {})
        arena.pairs = arena.pairs[:2]
        for _ in range(30):  # one logged-in voter stuffing two pairs
            arena.vote(stuffer, arena.serve_pair(stuffer).id, "a")
        arena.vote(other, arena.serve_pair(other).id, "b")
        for i in range(5):  # sessions nobody logged in: never counted
            arena.vote(f"anonymous-{i}", arena.serve_pair(f"anonymous-{i}").id, "b")
        counted = store.records(ratable=True)
        assert len(store.records()) == 36
        if rated:
            logged_in = {(r.judge, r.pair_id) for r in store.records() if r.judge.startswith("human:u-")}
            assert sorted((r.judge, r.pair_id) for r in counted) == sorted(logged_in)
            assert sum(r.judge == f"human:{store.voter_id('user:stuffer', True)}" for r in counted) <= 2
            assert sum(c for *_, c in store.outcome_counts()) == len(counted)
        else:
            assert counted == [] and store.outcome_counts() == []
            assert "prompt-set votes, whose fixed answers" in compute(store, bootstrap=10).summary
        store.close()


def test_empty_leaderboard_names_its_columns_and_says_so_once(arena):
    from arena.leaderboard import RATING_COLUMNS

    board = compute(arena.store, bootstrap=10)
    assert list(board.ratings.columns) == RATING_COLUMNS  # not Gradio's placeholder headers 1 | 2 | 3
    assert list(board.models.columns) == ["model", "votes", "wins", "ties", "losses"]
    assert "0 rated votes" not in board.summary and "Needs more votes" not in board.summary


def test_one_tie_vote_shows_no_zero_width_interval_and_counts_read_right(arena):
    voter = Voter("tie", authenticated=True)
    arena.vote(voter, arena.serve_pair(voter).id, "tie")
    board = compute(arena.store, bootstrap=20)
    table = board.ratings
    assert table["rating"].tolist() == [1000.0, 1000.0]
    assert table["lower"].isna().all() and table["upper"].isna().all()  # not 1000 [1000, 1000] as a 95% CI
    assert "No ranges or ranks yet" in board.summary  # one pair: below the minimum, zero width or not
    assert board.summary.startswith("1 rated vote.") and "(1 pair)" in board.summary
    # Method names are for those who open the details, not the first thing a visitor reads.
    plain, details = board.summary.split("<details>")
    assert "Bradley-Terry" not in plain and "bootstrap" in details
    multi = compute(arena.store, bootstrap=20, category="multi-turn")
    assert "0 votes" in multi.summary
    english = compute(arena.store, bootstrap=20, category="lang:en")
    assert "language: English" in english.summary


def test_win_fractions_of_a_pair_sum_to_one_as_shown():
    from arena.leaderboard import matrices
    from arena.ui import _heatmap
    from pairlab.records import Record

    votes = [Record(pair_id=str(i), prompt="p", model_a="x", model_b="y", response_a="a", response_b="b",
                    winner="model_a" if i < 6 else "model_b", judge="human") for i in range(11)]
    rates = matrices(votes)[0]
    assert rates.set_index("model").loc["x", "y"] == 0.545  # 6 of 11: the data keep their precision
    html = _heatmap(rates).to_html()  # what the page shows: 0.55 and 0.45, not 0.55 and 0.46
    assert ">0.55<" in html and ">0.45<" in html and ">0.46<" not in html
