"""One cookie must not move the campaign view: it counts the votes the leaderboard counts and no
others (real SQLite store, the project's own prompt-set pairs, the campaign's 1/probability weights).

The stuffing script: 40 honest votes, then 10 from one session, each for gemma3-270m on the
least likely picks (a public pairs file names the model behind each answer)."""

from arena.battles import Arena
from arena.leaderboard import campaign, compute
from arena.sessions import Voter
from test_arena_campaign import JUDGE, open_campaign, vote_on_picks

STUFFED = "gemma3-270m"


def stuff(arena: Arena, voter: Voter, n_votes: int) -> None:
    """``n_votes`` votes of one session for ``STUFFED``, each on one of the picks drawn with the
    lowest probability (a vote there weighs most); battles on other pairs are left unvoted."""
    lowest = sorted(arena.inclusion.values())[3]
    cast = 0
    while cast < n_votes:
        battle = arena.serve_pair(voter)
        if arena.inclusion[battle.pair_id] > lowest:
            continue
        arena.vote(voter, battle.id, "a" if battle.models[0] == STUFFED else "b")
        cast += 1


def board(arena: Arena):
    compute(arena.store, bootstrap=10)  # the leaderboard's refresh first (anomaly flags), as the page does
    return campaign(arena.store, arena.verdicts, arena.strategy, len(arena.inclusion))


def test_one_cookie_on_the_public_pairs_moves_nothing(tmp_path):
    """The shipped pairs (prompt_set_rated = false): the leaderboard counts no prompt-set vote,
    so neither does the campaign view, and it says how many it left out."""
    arena, *_ = open_campaign(tmp_path, closed_panel=False)
    try:
        vote_on_picks(arena, 40)
        before = board(arena)
        stuff(arena, Voter(arena.new_session("10.9.9.9"), "10.9.9.9"), 10)
        after = board(arena)
        assert after.ratings.equals(before.ratings)
        assert after.ratings.empty  # what the leaderboard counts of these votes: none
        assert compute(arena.store, bootstrap=10).ratings.empty
        assert "50 campaign votes stored but not counted" in after.summary and "prompt_set_rated" in after.summary
    finally:
        arena.store.close()


def test_one_cookie_does_not_flip_a_closed_panels_campaign(tmp_path):
    """A closed panel on private pairs (prompt_set_rated = true): 40 logged-in voters' votes
    rate smollm2 above gemma3; 10 votes from one anonymous session, and 10 from one logged-in
    voter on one pair, leave the order as it was (the member's first vote on the pair counts)."""
    arena, *_ = open_campaign(tmp_path)
    try:
        vote_on_picks(arena, 40)
        before = board(arena)
        shown = before.ratings.set_index("model")[f"people + {JUDGE}"]
        assert shown.idxmax() == "smollm2-135m-instruct" and before.ratings["votes"].sum() == 2 * 40
        stuff(arena, Voter(arena.new_session("10.9.9.9"), "10.9.9.9"), 10)
        after = board(arena)
        assert after.ratings.equals(before.ratings)
        assert "10 campaign votes stored but not counted" in after.summary
        # A logged-in member voting on one pair again and again: the first vote counts.
        arena.pairs = [p for p in arena.pairs if arena.inclusion[p.pair_id] == min(arena.inclusion.values())]
        stuff(arena, Voter("user:panel-member", authenticated=True), 10)
        after = board(arena).ratings.set_index("model")
        assert after["votes"].sum() == 2 * 41
        assert after[f"people + {JUDGE}"].idxmax() == "smollm2-135m-instruct"
    finally:
        arena.store.close()
