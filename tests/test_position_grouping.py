"""The per (voter, pair) verdicts, counted with numpy on factorised keys, against pandas'
groupby definitions (the slow, obvious twin) on tables with repeated records, several
voters, missing probabilities and keys, and string or integer pair ids."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.bias.position import calibrated_verdicts, debiased_rows, debiased_verdicts, order_check, position_bias


def _table(seed: int, n: int = 400, int_pairs: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = np.array(["m-b", "m-a", "m-c", "zeta", "alpha"], dtype=object)
    a = rng.integers(0, len(models), n)
    b = (a + rng.integers(1, len(models), n)) % len(models)
    pair = rng.integers(0, n // 4, n)
    canon = rng.integers(-1, 2, n).astype(np.int8)
    flip = rng.random(n) < 0.5
    decisive = canon != 0
    shown = np.where(flip, -canon, canon)
    prob = np.where(rng.random(n) < 0.1, np.nan, rng.random(n))
    voter = np.array(["v1", "v2", "v3"], dtype=object)[rng.integers(0, 3, n)]
    voter[rng.random(n) < 0.03] = None  # a record without a voter is in no group, as in groupby
    return pd.DataFrame({
        "voter": pd.Series(voter, dtype=object),
        "pair_id": pair.astype(np.int64) if int_pairs else pd.Series([f"p{k:03d}" for k in pair], dtype=object),
        "model_a": pd.Series(models[a], dtype=object), "model_b": pd.Series(models[b], dtype=object),
        "flip": flip, "canon": canon, "decisive": decisive,
        "first_wins": np.where(decisive, (shown == 1).astype(float), np.nan), "prob_a": prob,
        "winner": np.where(shown == 1, "model_a", np.where(shown == -1, "model_b", "tie")).astype(object),
    })


def _twin_groups(rows: pd.DataFrame, by_models: bool = False) -> pd.DataFrame:
    a, b = rows["model_a"].astype(str).to_numpy(), rows["model_b"].astype(str).to_numpy()
    frame = pd.DataFrame({
        "voter": rows["voter"], "pair_id": rows["pair_id"],
        "flip": (a > b if by_models else rows["flip"]).astype(np.int8), "canon": rows["canon"],
        "decisive": rows["decisive"].astype(np.int8), "first": (rows["first_wins"] == 1).astype(np.int8),
    })
    keys = ["voter", "pair_id"]
    if by_models:
        frame["low"], frame["high"] = np.minimum(a, b), np.maximum(a, b)
        keys += ["low", "high"]
    out = frame.groupby(keys, sort=False).agg(
        flip_min=("flip", "min"), flip_max=("flip", "max"), canon_min=("canon", "min"),
        canon_max=("canon", "max"), n=("canon", "size"), decisive=("decisive", "sum"), first=("first", "sum"))
    out["swapped"] = out["flip_min"] != out["flip_max"]
    out["consistent"] = out["canon_min"] == out["canon_max"]
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("int_pairs", [False, True])
def test_verdicts_per_voter_and_pair_equal_groupby_definitions(seed, int_pairs):
    rows = _table(seed, int_pairs=int_pairs)
    groups = _twin_groups(rows)
    verdicts = debiased_verdicts(rows)
    assert list(zip(verdicts["voter"], verdicts["pair_id"])) == list(groups.index)  # groups in first-row order
    assert (verdicts["canon"].to_numpy() == np.where(groups["consistent"], groups["canon_min"], 0)).all()
    assert (verdicts["n_records"].to_numpy() == groups["n"].to_numpy()).all()
    assert (verdicts["swapped"].to_numpy() == groups["swapped"].to_numpy()).all()

    p = pd.Series(np.where(rows["flip"], 1.0 - rows["prob_a"], rows["prob_a"]))
    grouped = p.groupby([rows["voter"], rows["pair_id"]], sort=False)
    complete = (grouped.count() == grouped.size()).to_numpy()
    want = np.where(complete, np.sign(grouped.mean().to_numpy() - 0.5), verdicts["canon"].to_numpy())
    assert (calibrated_verdicts(rows)["canon"].to_numpy() == want).all()

    for calibrate in (False, True):
        twin = rows.drop_duplicates(["voter", "pair_id"]).dropna(subset=["voter"])
        got = debiased_rows(rows, calibrate=calibrate)
        assert (got["pair_id"].to_numpy() == twin["pair_id"].to_numpy()).all()
        assert (got["voter"].to_numpy() == twin["voter"].to_numpy()).all()
        assert list(got.columns) == [c for c in rows.columns if c != "canon"] + ["canon"]


@pytest.mark.parametrize("seed", range(4))
def test_position_counts_per_model_pair_equal_groupby_definitions(seed):
    rows = _table(seed)
    groups = _twin_groups(rows, by_models=True)
    swapped = groups[groups["swapped"]]
    inconsistent = swapped[~swapped["consistent"]]
    leans = inconsistent["decisive"] > 0
    est = position_bias(rows, n_boot=50)
    assert est.n_swapped_pairs == len(swapped)
    assert est.n_consistent == int(swapped["consistent"].sum())
    assert est.n_first_biased == int((leans & (inconsistent["first"] == inconsistent["decisive"])).sum())
    assert est.n_second_biased == int((leans & (inconsistent["first"] == 0)).sum())

    a, b = rows["model_a"].astype(str), rows["model_b"].astype(str)
    low_first = pd.Series((a <= b).to_numpy()).groupby([np.where(a <= b, a, b), np.where(a <= b, b, a)]).agg(
        ["sum", "size"])
    low_first = low_first[low_first["size"] >= 2]
    check = order_check(rows)
    assert check.n_records == int(low_first["size"].sum())
    assert check.minority_share == float(
        np.minimum(low_first["sum"], low_first["size"] - low_first["sum"]).sum() / low_first["size"].sum())
