"""One picks reader (analysis.plan.read_picks) for the arena's campaign and ``ratings --picks``:
a probability must be a number in [1e-6, 1] (not `true`, not 1e-300, not the subnormal 5e-324
whose inverse is infinite), a pair is picked once (a duplicate is named by file and line, so the
arena and the ratings cannot take different probabilities), and weights spread wider than a
thousandfold are warned about.
"""

from __future__ import annotations

import json

import pytest

from analysis.plan import read_picks
from arena.battles import campaign_pairs
from pairlab.records import read_pairs
from test_arena_campaign import PAIRS


def _write(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.parametrize("prob, said", [(True, "not True"), (1e-300, "more than 1,000,000 votes"),
                                         (5e-324, "more than 1,000,000 votes"), ("0.5", "not '0.5'"),
                                         (0, "not 0"), (1.5, "not 1.5")])
def test_a_probability_that_is_not_a_usable_number_is_refused_by_line(tmp_path, prob, said):
    path = _write(tmp_path / "picks.jsonl", [{"pair_id": "a", "inclusion_prob": 0.5},
                                             {"pair_id": "b", "inclusion_prob": prob}])
    with pytest.raises(ValueError, match="picks.jsonl:2: inclusion_prob must be a number") as caught:
        read_picks(path)
    assert said in str(caught.value)


def test_a_pair_picked_twice_is_refused_naming_both_lines(tmp_path):
    path = _write(tmp_path / "picks.jsonl", [{"pair_id": "a", "inclusion_prob": 0.5},
                                             {"pair_id": "b", "inclusion_prob": 0.4},
                                             {"pair_id": "a", "inclusion_prob": 0.05}])
    with pytest.raises(ValueError, match=r"picks.jsonl:3: pair_id 'a' is picked twice \(first on line 1\)"):
        read_picks(path)


def test_the_arena_and_the_ratings_read_the_same_duplicate_alike(tmp_path, capsys):
    """The arena took the last probability, ratings --picks the first: now both refuse the file."""
    from analysis.ratings.cli import main as ratings_main

    pairs = read_pairs(PAIRS)
    pid = pairs[0].pair_id
    path = _write(tmp_path / "picks.jsonl", [{"pair_id": pid, "inclusion_prob": 0.9},
                                             {"pair_id": pid, "inclusion_prob": 0.001}])
    with pytest.raises(ValueError, match="picked twice"):
        campaign_pairs(pairs, tmp_path / "picks.jsonl")
    votes = _write(tmp_path / "votes.jsonl", [{"pair_id": pid, "prompt": "q", "model_a": "x", "model_b": "y",
                                               "response_a": "a", "response_b": "b", "winner": "model_a",
                                               "judge": "human"}])
    assert ratings_main(["--votes", votes, "--judge", "human", "--ppi", "j", "--picks", path]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "picks.jsonl:2: pair_id" in err and "picked twice" in err


def test_weights_spread_wider_than_a_thousandfold_are_warned_about(tmp_path):
    path = _write(tmp_path / "picks.jsonl", [{"pair_id": "a", "inclusion_prob": 0.9},
                                             {"pair_id": "b", "inclusion_prob": 1e-4}])
    with pytest.warns(UserWarning, match="counts as 9,000 votes"):
        picks = read_picks(path)
    assert picks["inclusion_prob"].tolist() == [0.9, 1e-4]
    even = _write(tmp_path / "even.jsonl", [{"pair_id": "a", "inclusion_prob": 0.9},
                                            {"pair_id": "b", "inclusion_prob": 0.3}])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_picks(even)
