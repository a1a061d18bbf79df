"""The arena's labelling campaign: prompt-set mode serves the planner's picks and records
each vote's inclusion probability (real SQLite store, the project's own prompt-set pairs)."""

import json

from app_process import ROOT
import pytest

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.sessions import Voter
from arena.store import VoteStore
from pairlab.records import read_pairs

PAIRS = ROOT / "data" / "prompts_pairs.jsonl"


def _picks(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_campaign_serves_only_the_picks_and_records_their_inclusion_probability(tmp_path):
    pairs = read_pairs(PAIRS)
    chosen = {pairs[1].pair_id: 0.25, pairs[4].pair_id: 0.8}
    picks = _picks(tmp_path / "picks.jsonl", [{"pair_id": k, "inclusion_prob": v, "strategy": "active"}
                                               for k, v in chosen.items()])
    store = VoteStore(f"sqlite:///{tmp_path / 'votes.db'}")
    try:
        arena = Arena(ArenaConfig(db=store.url, pairs=PAIRS, picks=picks, rate_limit=10_000), store, {})
        seen = set()
        for i in range(12):
            voter = Voter(f"voter-{i}")
            battle = arena.serve_pair(voter)
            record = arena.vote(voter, battle.id, "a")
            seen.add(record.pair_id)
            assert record.meta["inclusion_prob"] == chosen[record.pair_id]
        assert seen == set(chosen)  # both picks served, nothing else
    finally:
        store.close()


def test_campaign_refuses_picks_the_pairs_file_does_not_hold(tmp_path):
    picks = _picks(tmp_path / "picks.jsonl", [{"pair_id": "not-a-pair", "inclusion_prob": 0.5},
                                               {"pair_id": read_pairs(PAIRS)[0].pair_id, "inclusion_prob": 0.5}])
    store = VoteStore(f"sqlite:///{tmp_path / 'votes.db'}")
    try:
        with pytest.raises(ValueError, match="1 picks name pairs that the pairs file does not hold"):
            Arena(ArenaConfig(db=store.url, pairs=PAIRS, picks=picks), store, {})
    finally:
        store.close()
    with pytest.raises(ValueError, match="needs pairs"):
        ArenaConfig(picks=picks)


JUDGE = "length-judge"


def write_campaign(folder, n_picks: int = 16):
    """A campaign on the shipped prompt set: the planner's active picks (probabilities 0.3 to 0.9)
    and a judge that always prefers the longer answer, in both orders (as judges.run writes them)."""
    from pairlab.records import Record, write_records

    pairs = read_pairs(PAIRS)
    chosen = {p.pair_id: round(0.3 + 0.6 * k / (n_picks - 1), 3) for k, p in enumerate(pairs[:n_picks])}
    picks = _picks(folder / "picks.jsonl", [{"pair_id": k, "inclusion_prob": v, "strategy": "active"}
                                             for k, v in chosen.items()])
    verdicts = []
    for p in pairs:  # the judge saw every pair, picked or not
        for (ma, ra), (mb, rb) in (((p.model_a, p.response_a), (p.model_b, p.response_b)),
                                   ((p.model_b, p.response_b), (p.model_a, p.response_a))):
            verdicts.append(Record(pair_id=p.pair_id, prompt=p.prompt, model_a=ma, model_b=mb, response_a=ra,
                                   response_b=rb, winner="model_a" if len(ra) >= len(rb) else "model_b",
                                   judge=JUDGE))
    write_records(folder / "verdicts.jsonl", verdicts)
    return picks, folder / "verdicts.jsonl", chosen


def vote_on_picks(arena, n_votes: int, seed: int = 0):
    """People who prefer the longer answer 17 times in 18 of their decisive votes (a tie 1 in 10), one voter a vote: the
    judge predicts them, and smollm2-135m-instruct's answers are the longer in 22 of the 32 pairs. In a closed panel
    (``prompt_set_rated``) they are logged-in members, the only voters whose prompt-set votes the leaderboard counts."""
    import random

    rng = random.Random(seed)
    for i in range(n_votes):
        name = f"campaign-voter-{seed}-{i}"
        voter = Voter(f"user:{name}", authenticated=True) if arena.config.prompt_set_rated else Voter(name)
        battle = arena.serve_pair(voter)
        turn, u = battle.turns[-1], rng.random()
        longer = "a" if len(turn.response_a) >= len(turn.response_b) else "b"
        choice = "tie" if u > 0.9 else longer if u < 0.85 else {"a": "b", "b": "a"}[longer]
        arena.vote(voter, battle.id, choice)


def open_campaign(folder, *, closed_panel: bool = True):
    """(arena, picks, verdicts): a campaign on the shipped prompt set's pairs; ``closed_panel``: on a
    private copy, rating logged-in members' votes (prompt_set_rated), as a campaign's ratings need."""
    import random

    picks, verdicts, _ = write_campaign(folder)
    pairs = PAIRS
    if closed_panel:  # the shipped file is public: the arena refuses to rate votes on it
        pairs = folder / "private" / PAIRS.name
        pairs.parent.mkdir()
        pairs.write_bytes(PAIRS.read_bytes())
    store = VoteStore(f"sqlite:///{folder / 'votes.db'}", prompt_set_rated=closed_panel)
    config = ArenaConfig(db=store.url, pairs=pairs, picks=picks, verdicts=verdicts, rate_limit=10_000,
                         prompt_set_rated=closed_panel)
    return Arena(config, store, {}, rng=random.Random(3)), picks, verdicts


@pytest.fixture
def campaign_arena(tmp_path):
    arena, picks, verdicts = open_campaign(tmp_path)
    yield arena, picks, verdicts
    arena.store.close()


def test_leaderboard_people_plus_judge_are_the_ratings_command_numbers(campaign_arena, tmp_path, capsys):
    from analysis.frames import load_frame
    from analysis.ratings.cli import main as ratings_main
    from analysis.ratings.ppi import ppi_ratings
    from analysis.plan import read_picks
    from arena.leaderboard import campaign
    from pairlab.records import write_records

    arena, picks, verdicts = campaign_arena
    vote_on_picks(arena, 40)
    board = campaign(arena.store, arena.verdicts, arena.strategy, len(arena.inclusion))
    shown = board.ratings.set_index("model")
    assert list(board.ratings.columns[2:5]) == [f"people + {JUDGE}", "lower", "upper"]
    assert shown[["lower", "upper", "alone lower", "alone upper"]].notna().all().all()  # >= 10 pairs: ranges
    assert "**active** picks (16 pairs" in board.summary and "1/probability" in board.summary

    # The same votes exported, rated by the command: the same numbers.
    votes = tmp_path / "votes.jsonl"
    write_records(votes, arena.store.records())
    assert ratings_main(["--votes", str(votes), str(verdicts), "--judge", "human", "--ppi", JUDGE,
                         "--picks", str(picks), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ppi"]["design"] == "picks:active" and out["ppi"]["n_human"] == 40
    for row in out["ratings"]:
        assert shown.loc[row["model"], f"people + {JUDGE}"] == pytest.approx(row["rating"], abs=0.051)
        assert shown.loc[row["model"], "lower"] == pytest.approx(row["lower"], abs=0.051)
        assert shown.loc[row["model"], "upper"] == pytest.approx(row["upper"], abs=0.051)
    # People alone: the same votes and weights with the judge's weight at 0.
    frame = load_frame([votes, verdicts], include_prompt_set=True)
    alone = ppi_ratings(frame, JUDGE, lam=0.0, picks=read_picks(str(picks))).table.table.set_index("model")
    assert shown["people alone"].to_numpy() == pytest.approx(alone.loc[shown.index, "rating"].to_numpy(), abs=0.051)
    assert shown["alone lower"].to_numpy() == pytest.approx(alone.loc[shown.index, "lower"].to_numpy(), abs=0.051)
    # People mostly prefer the longer answer, as the judge does: its verdicts narrow the ranges.
    assert out["ppi"]["lambda"] > 0
    width = {name: (shown[upper] - shown[lower]).mean() for name, lower, upper in
             (("both", "lower", "upper"), ("alone", "alone lower", "alone upper"))}
    assert width["both"] < width["alone"]
    assert shown[f"people + {JUDGE}"].idxmax() == "smollm2-135m-instruct"


def test_leaderboard_campaign_claims_no_range_below_ten_pairs(campaign_arena):
    from arena.leaderboard import campaign

    arena, *_ = campaign_arena
    board = campaign(arena.store, arena.verdicts, arena.strategy, len(arena.inclusion))
    assert board.ratings.empty and "No campaign votes yet" in board.summary
    arena.pairs = arena.pairs[:4]  # votes on four pairs only
    vote_on_picks(arena, 1)
    board = campaign(arena.store, arena.verdicts, arena.strategy, len(arena.inclusion))
    assert board.ratings.empty and "Needs more votes: some model has so far only won" in board.summary
    vote_on_picks(arena, 11, seed=1)
    board = campaign(arena.store, arena.verdicts, arena.strategy, len(arena.inclusion))
    assert len(board.ratings) == 2 and board.ratings[f"people + {JUDGE}"].notna().all()
    assert board.ratings[["rank (UB)", "lower", "upper", "alone lower", "alone upper"]].isna().all().all()
    assert "No ranges or ranks yet" in board.summary and "(4 so far)" in board.summary


def test_campaign_verdicts_must_cover_the_picks_and_name_one_judge(tmp_path):
    from arena.leaderboard import read_verdicts
    from pairlab.records import read_records, write_records

    picks, verdicts, chosen = write_campaign(tmp_path)
    store = VoteStore(f"sqlite:///{tmp_path / 'votes.db'}")
    try:
        records = read_records(verdicts)
        write_records(verdicts, [r for r in records if r.pair_id != next(iter(chosen))])
        with pytest.raises(ValueError, match="gave no verdict on 1 of the 16 picks"):
            Arena(ArenaConfig(db=store.url, pairs=PAIRS, picks=picks, verdicts=verdicts), store, {})
    finally:
        store.close()
    with pytest.raises(ValueError, match="no verdicts of judge 'gpt-4o'; its judges: length-judge"):
        read_verdicts(verdicts, "gpt-4o")
    with pytest.raises(ValueError, match="needs picks"):
        ArenaConfig(pairs=PAIRS, verdicts=verdicts)


def test_the_leaderboard_page_has_the_campaign_view_only_with_a_campaigns_verdicts(campaign_arena, tmp_path):
    from arena.ui import leaderboard_page

    arena, picks, _ = campaign_arena

    def shown(page) -> set:
        return {getattr(block, "elem_id", None) for block in page.blocks.values()} - {None}

    with_judge = shown(leaderboard_page(arena))
    assert {"campaign-summary", "campaign-ratings", "ratings"} <= with_judge
    store = VoteStore(f"sqlite:///{tmp_path / 'plain.db'}")
    try:
        plain = Arena(ArenaConfig(db=store.url, pairs=PAIRS, picks=picks), store, {})
        assert shown(leaderboard_page(plain)) == with_judge - {"campaign-summary", "campaign-ratings"}
    finally:
        store.close()


def test_votes_of_two_plans_on_one_pair_are_not_weighted_as_one(campaign_arena):
    from arena.leaderboard import campaign

    arena, *_ = campaign_arena
    arena.pairs = arena.pairs[:1]
    vote_on_picks(arena, 3)
    arena.inclusion[arena.pairs[0].pair_id] = 0.05  # a new plan drew the same pair with another probability
    vote_on_picks(arena, 3, seed=1)
    board = campaign(arena.store, arena.verdicts, arena.strategy, len(arena.inclusion))
    assert board.ratings.empty and "different inclusion probabilities" in board.summary
