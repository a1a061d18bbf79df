"""Prediction-powered Bradley-Terry ratings (analysis/ratings/ppi.py): the PPI authors'
package as the reference, people-alone as its lambda = 0 case, coverage by simulation,
and the CLI's ``--ppi``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.frames import load_frame
from analysis.ratings import rate
from analysis.ratings.bt import fit_counts
from analysis.ratings.counts import PairCounts
from analysis.ratings.ppi import PPIData, _inverses, fit_ppi, fit_ppi_rounds, ppi_data, ppi_ratings, rank_sets
from support import run_module

REPO = Path(__file__).resolve().parents[1]
PANDALM = REPO.parent / "shared" / "data" / "pandalm"
Z = 1.959963984540054


def _design(i: np.ndarray, j: np.ndarray, m: int) -> np.ndarray:
    """ppi_py's logistic design for Bradley-Terry: +1 at i, -1 at j, model 0 dropped."""
    x = np.zeros((len(i), m))
    x[np.arange(len(i)), i] = 1.0
    x[np.arange(len(i)), j] = -1.0
    return x[:, 1:]


# ppi_py's statistics are numba-compiled (about 20 s per process here): run in a child
# process with numba's JIT off, where the same Python code takes a fraction of a second.
_REFERENCE = """
import json, sys
import numpy as np
from ppi_py import ppi_logistic_ci, ppi_logistic_pointestimate
d = np.load(sys.argv[1])
out = {}
for lam in (0.5, 1.0):
    lower, upper = ppi_logistic_ci(d["x"], d["y"], d["yhat"], d["xu"], d["yhatu"], alpha=0.05, lam=lam)
    point = ppi_logistic_pointestimate(d["x"], d["y"], d["yhat"], d["xu"], d["yhatu"], lam=lam)
    out[str(lam)] = [lower.tolist(), upper.tolist(), point.tolist()]
print(json.dumps(out))
"""


@pytest.mark.process  # ppi-python with numba's JIT off, set before numba is imported
def test_equals_ppi_python_point_estimate_and_interval(tmp_path):
    """Unclustered, no ties, disjoint labelled and unlabelled sets: at the same lambda our
    estimate is ppi_py.ppi_logistic_ci's (its centre and ppi_logistic_pointestimate) and our
    sandwich interval its interval (theirs divides variances by n - 1, ours by n)."""
    rng = np.random.default_rng(1)
    m, n, big_n = 5, 800, 6000
    theta = rng.normal(0, 1, m)

    def draw(k):
        a = rng.integers(0, m, k)
        b = (a + rng.integers(1, m, k)) % m
        i, j = np.minimum(a, b), np.maximum(a, b)
        d = theta[i] - theta[j]
        u = rng.random(k)
        y = (u < 1 / (1 + np.exp(-d))).astype(float)
        tilt = 0.8 * ((i == 0).astype(float) - (j == 0))  # the judge favours model 0
        return i, j, y, (u < 1 / (1 + np.exp(-(d + tilt)))).astype(float)

    li, lj, ly, lyhat = draw(n)
    ui, uj, _, uyhat = draw(big_n)
    keys = np.r_[li * m + lj, ui * m + uj]
    pairs = np.unique(keys)
    data = PPIData(
        models=pd.Index([f"m{k}" for k in range(m)]), i=pairs // m, j=pairs % m, pair=np.searchsorted(pairs, keys),
        n_judge=np.r_[np.zeros(n), np.ones(big_n)], yhat_judge=np.r_[np.zeros(n), uyhat],
        n_human=np.r_[np.ones(n), np.zeros(big_n)], y_human=np.r_[ly, np.zeros(big_n)],
        yhat_human=np.r_[lyhat, np.zeros(big_n)], weight=np.ones(n + big_n),
    )
    np.savez(tmp_path / "data.npz", x=_design(li, lj, m), y=ly, yhat=lyhat, xu=_design(ui, uj, m), yhatu=uyhat)
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    child = subprocess.run([sys.executable, "-c", _REFERENCE, str(tmp_path / "data.npz")], capture_output=True,
                           text=True, timeout=300, env=env)
    assert child.returncode == 0, child.stderr
    reference = json.loads(child.stdout)
    for lam in (0.5, 1.0):
        fit = fit_ppi(data, lam)
        contrast = fit.theta[1:] - fit.theta[0]  # theirs pins model 0 at 0; ours centres
        c = fit.covariance
        half = Z * np.sqrt(np.diag(c)[1:] + c[0, 0] - 2 * c[0, 1:])
        lower, upper, point = map(np.array, reference[str(lam)])
        np.testing.assert_allclose(contrast, point, atol=1e-6)
        np.testing.assert_allclose(contrast, (lower + upper) / 2, atol=1e-6)
        np.testing.assert_allclose(half, (upper - lower) / 2, rtol=2 / n)
        assert fit.effective_human_votes > n  # an informative judge on 7.5x as many pairs


@pytest.fixture(scope="module")
def pandalm() -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the test set's known bad rows
        return load_frame(PANDALM)


def _units(frame: pd.DataFrame) -> pd.Series:
    """A pair_id with its two models: how people's votes and a judge's verdicts are matched
    (PandaLM's test set repeats some pair_ids across model pairs)."""
    low = frame[["model_a", "model_b"]].min(axis=1)
    high = frame[["model_a", "model_b"]].max(axis=1)
    return frame["pair_id"] + "|" + low + "|" + high


def test_lambda_zero_is_people_alone_as_method_bt(pandalm):
    """lambda = 0 is people's votes alone: the same ratings and clustered sandwich intervals as
    ``--method bt`` on them (three people per pair, ties as half wins)."""
    fitted = ppi_ratings(pandalm, "pandalm-7b", lam=0.0).table.table.set_index("model")
    people = pandalm[pandalm["judge_type"] == "human"]
    plain = rate(people.assign(pair_id=_units(people)), "bt").table.set_index("model")
    for column in ("rating", "lower", "upper"):
        np.testing.assert_allclose(fitted[column], plain.loc[fitted.index, column], atol=1e-6)


def test_judge_verdicts_on_pairs_people_never_saw_are_used(pandalm):
    """People on a third of PandaLM's pairs, the judge on all: every judged pair counts,
    the estimate moves off people-alone, and the intervals narrow (effective votes > votes)."""
    units = _units(pandalm)
    pairs = units.drop_duplicates().sample(frac=1 / 3, random_state=0)
    people = (pandalm["judge_type"] == "human") & units.isin(pairs)
    frame = pandalm[people | (pandalm["judge"] == "pandalm-7b")]
    out = ppi_ratings(frame, "pandalm-7b")
    summary = out.summary()
    assert summary["n_judge"] == units[pandalm["judge"] == "pandalm-7b"].nunique()
    assert summary["n_human_pairs"] == len(pairs) < summary["n_judge"]
    assert 0 < summary["lambda"] <= 1
    assert summary["effective_human_votes"] > summary["n_human"]
    assert not np.allclose(out.fit.theta, out.fit.classical_theta)


def test_human_votes_on_pairs_the_judge_never_saw_are_left_out_and_counted(pandalm):
    """GPT-3.5's verdicts on 25 PandaLM pairs could not be parsed: their 75 votes have no prediction,
    so the ratings leave them out and say so, as the report does (issue 30: its recommended
    command used to exit 2 here)."""
    result = ppi_ratings(pandalm, "gpt-3.5-turbo")
    assert result.n_human_left_out == 75 and result.summary()["n_human_left_out"] == 75
    assert "75 human votes left out" in result.describe()


def test_votes_on_pairs_the_judge_never_saw_can_be_left_out(pandalm):
    """``unjudged="leave out"`` (what a judge is worth in human votes uses) gives the data of
    the votes on judged pairs alone, models only those votes had gone too: the same rows
    and fit as picking those votes first."""
    verdicts = pandalm[pandalm["judge"] == "gpt-3.5-turbo"]
    people = pandalm[pandalm["judge_type"] == "human"]
    unseen = (people["model_a"] == "llama-7b") | (people["model_b"] == "llama-7b")  # a model only people saw
    verdicts = verdicts[~verdicts["model_a"].isin(["llama-7b"]) & ~verdicts["model_b"].isin(["llama-7b"])]
    judged = _units(people).isin(_units(verdicts)).to_numpy()
    assert unseen.any() and not judged[unseen.to_numpy()].any() and 75 < (~judged).sum() < len(people)
    left_out = ppi_data(people, verdicts, unjudged="leave out")
    picked = ppi_data(people[judged], verdicts)
    assert "llama-7b" not in left_out.models and left_out.models.equals(picked.models)
    for field in ("i", "j", "pair", "n_judge", "yhat_judge", "n_human", "y_human", "yhat_human", "weight", "n_battles"):
        np.testing.assert_array_equal(getattr(left_out, field), getattr(picked, field))
    assert left_out.totals()[0] == judged.sum()
    with pytest.raises(ValueError, match="never judged"):
        ppi_data(people, verdicts)


# The coverage simulation: six models in two families, true human strengths, a judge that
# agrees with people on every pair except that it adds +0.8 log-odds to one family (the same
# uniform draw decides both), people on 20% of 2,500 pairs.
_M, _PAIRS, _LABELLED, _TILT, _ROUNDS = 6, 2500, 0.2, 0.8, 200
_THETA = np.linspace(-0.8, 0.8, _M)
_FAMILY = np.array([1, 0, 1, 0, 1, 0])
_I, _J = np.triu_indices(_M, 1)
_MODELS = pd.Index([f"m{k}" for k in range(_M)])


def _replicate(rng: np.random.Generator, informative: bool) -> tuple[PPIData, np.ndarray, np.ndarray]:
    pair = rng.integers(0, len(_I), _PAIRS)
    i, j = _I[pair], _J[pair]
    gap = _THETA[i] - _THETA[j]
    u = rng.random(_PAIRS)
    y = (u < 1 / (1 + np.exp(-gap))).astype(float)
    if informative:
        yhat = (u < 1 / (1 + np.exp(-(gap + _TILT * (_FAMILY[i] - _FAMILY[j]))))).astype(float)
    else:
        yhat = (rng.random(_PAIRS) < 0.5).astype(float)
    labelled = (rng.random(_PAIRS) < _LABELLED).astype(float)
    ones = np.ones(_PAIRS)
    data = PPIData(_MODELS, _I, _J, pair, ones, yhat, labelled, y * labelled, yhat * labelled, ones)
    return data, pair, yhat


def _covered(estimate: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    return np.abs(estimate - (_THETA - _THETA.mean())) <= Z * np.sqrt(np.diag(covariance))


@pytest.mark.simulation
def test_coverage_simulation_ppi_covers_judge_alone_does_not():
    """Over 200 seeded replications the PPI intervals cover the true (people's) strengths at
    93-97%, the judge-only intervals far less; with a judge that says nothing about the
    pairs, lambda goes to 0 and the PPI intervals are no wider than people's alone."""
    rng = np.random.default_rng(2024)
    ppi, judge_only = [], []
    for _ in range(_ROUNDS):
        data, pair, yhat = _replicate(rng, informative=True)
        fit = fit_ppi(data)
        ppi.append(_covered(fit.theta, fit.covariance))
        wins, totals = np.bincount(pair, yhat, len(_I)), np.bincount(pair, minlength=len(_I)).astype(float)
        judge = fit_counts(PairCounts(_MODELS, _I, _J, wins, totals - wins, np.zeros(len(_I)),
                                      np.zeros(_M, dtype=np.int64)))
        judge_only.append(_covered(judge.scores.to_numpy(), judge.covariance()))
    assert 0.93 <= np.mean(ppi) <= 0.97
    assert np.mean(judge_only) < 0.5

    lams, widths = [], []
    for _ in range(_ROUNDS):
        fit = fit_ppi(_replicate(rng, informative=False)[0])
        lams.append(fit.lam)
        widths.append(np.sqrt(np.diag(fit.covariance)).mean() / np.sqrt(np.diag(fit.classical_covariance)).mean())
    assert np.mean(lams) < 0.05
    assert max(widths) <= 1.0 + 1e-12


def test_rank_sets_from_intervals():
    """Chatzi et al.'s rank sets: all ranks a model can take given which differences are sure."""
    theta = np.array([11.0, 6.5, 5.0, 0.5])
    assert rank_sets(theta, np.diag([0.5, 0.5, 0.5, 0.5]) ** 2) == [(1, 1), (2, 3), (2, 3), (4, 4)]


def test_rank_sets_hold_jointly():
    """Six models 0.2 apart with correlated estimates (sd 0.1 each): every model's true rank
    inside its rank set together in at least 95% of draws, and the sets narrower than all
    ranks most of the time (they say something)."""
    truth = np.array([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    rank = len(truth) - np.argsort(np.argsort(truth))
    cov = 0.1**2 * (np.eye(6) + 0.3)
    rng = np.random.default_rng(0)
    held, informative, runs = 0, 0, 300
    for r in range(runs):
        sets = rank_sets(rng.multivariate_normal(truth, cov), cov, seed=r)
        held += all(lo <= k <= hi for (lo, hi), k in zip(sets, rank))
        informative += sum(hi - lo for lo, hi in sets) < 6 * 5
    assert held / runs >= 0.95, held
    assert informative / runs > 0.9, informative


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return run_module("analysis.ratings", *args, cwd=REPO)


def test_cli_ppi_json_block(tmp_path, pandalm):
    """``--judge human --ppi JUDGE --json``: --method bt's rows plus rank sets, and the ppi block."""
    units = _units(pandalm)
    pairs = units.drop_duplicates().sample(frac=0.2, random_state=1)
    keep = ((pandalm["judge_type"] == "human") & units.isin(pairs)) | (pandalm["judge"] == "pandalm-7b")
    path = tmp_path / "battles.csv"
    pandalm.loc[keep, ["pair_id", "model_a", "model_b", "winner", "judge", "judge_type"]].to_csv(path, index=False)
    out = run_cli("--votes", str(path), "--judge", "human", "--ppi", "pandalm-7b", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert {"model", "rating", "lower", "upper", "rank", "n", "rank_set"} == set(doc["ratings"][0])
    ppi = doc["ppi"]
    assert set(ppi) == {"judge", "design", "n_human", "n_human_left_out", "n_human_pairs", "n_judge", "lambda",
                        "effective_human_votes", "lambda_per_model"}
    assert ppi["design"] == "uniform"
    assert ppi["judge"] == "pandalm-7b" and ppi["n_human_pairs"] == len(pairs)
    assert ppi["effective_human_votes"] >= ppi["n_human"] == int(keep.sum()) - ppi["n_judge"]
    for row in doc["ratings"]:
        assert row["rank_set"][0] <= row["rank"] <= row["rank_set"][1]

    left = run_cli("--votes", str(PANDALM), "--judge", "human", "--ppi", "gpt-3.5-turbo")
    assert left.returncode == 0 and "75 human votes left out" in left.stdout
    wrong = run_cli("--votes", str(path), "--method", "elo", "--ppi", "pandalm-7b")
    assert "--ppi applies to --method bt" in wrong.stderr


def _alpaca_like(rng: np.random.Generator, share: float) -> pd.DataFrame:
    """Four models against one baseline, 400 prompts each; the judge on every pair, one
    person on ``share`` of them; the judge favours m1 by +0.8 log-odds."""
    strength = {"m1": 0.5, "m2": 0.0, "m3": -0.3, "m4": 0.8}
    rows = []
    for model, s in strength.items():
        for k in range(400):
            u = rng.random()
            person = "model_a" if u < 1 / (1 + np.exp(-s)) else "model_b"
            tilt = 0.8 if model == "m1" else 0.0
            verdict = "model_a" if u < 1 / (1 + np.exp(-(s + tilt))) else "model_b"
            pid = f"{model}-{k}"
            rows.append({"pair_id": pid, "model_a": model, "model_b": "base", "winner": verdict, "judge": "j",
                         "judge_type": "llm"})
            if rng.random() < share:
                rows.append({"pair_id": pid, "model_a": model, "model_b": "base", "winner": person,
                             "judge": "human:1", "judge_type": "human"})
    return pd.DataFrame(rows)


def test_winrate_ppi_is_the_rectified_mean(tmp_path):
    """--method winrate --ppi: with people on every pair the win rate is people's own (as
    --method winrate on their votes); with people on a fifth, the judge's +0.8 tilt for m1
    is corrected (its win rate moves off the judge's) and the votes count for more."""
    from analysis.ratings import win_rates
    from analysis.ratings.ppi import ppi_win_rates

    rng = np.random.default_rng(5)
    everyone = _alpaca_like(rng, 1.0)
    ppi = ppi_win_rates(everyone, "j").table.set_index("model")
    people = win_rates(everyone[everyone["judge_type"] == "human"], "base").table.set_index("model")
    np.testing.assert_allclose(ppi["win_rate"], people.loc[ppi.index, "win_rate"], atol=1e-6)

    fifth = _alpaca_like(rng, 0.2)
    out = ppi_win_rates(fifth, "j")
    table = out.table.set_index("model")
    judge_alone = win_rates(fifth[fifth["judge"] == "j"], "base").table.set_index("model")
    true_m1 = 100 / (1 + np.exp(-0.5))
    assert table.loc["m1", "lower"] <= true_m1 <= table.loc["m1", "upper"]
    assert not judge_alone.loc["m1", "lower"] <= true_m1 <= judge_alone.loc["m1", "upper"]
    assert (table["effective_human_votes"] >= table["n_human"]).all()
    assert out.to_dict()["ppi"]["n_judge"] == 1600

    fifth.to_csv(tmp_path / "battles.csv", index=False)
    cli = run_cli("--votes", str(tmp_path / "battles.csv"), "--method", "winrate", "--judge", "human", "--ppi", "j",
                  "--json")
    assert cli.returncode == 0, cli.stderr
    doc = json.loads(cli.stdout)
    assert doc["method"] == "winrate-ppi" and doc["baseline"] == "base"
    assert {r["model"]: r["win_rate"] for r in doc["ratings"]} == pytest.approx(table["win_rate"].to_dict())


def _expanded(data: PPIData) -> PPIData:
    """One row per cluster again: each row repeated ``weight`` times with weight 1."""
    times = data.weight.astype(np.int64)
    assert np.array_equal(times, data.weight)
    rows = {f: np.repeat(getattr(data, f), times) for f in ("pair", "n_judge", "yhat_judge", "n_human", "y_human",
                                                             "yhat_human")}
    return replace(data, **rows, weight=np.ones(int(times.sum())))


def _assert_same_fit(a, b):
    for field in ("theta", "covariance", "classical_theta", "classical_covariance"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-10, atol=1e-12)
    assert a.lam == pytest.approx(b.lam, rel=1e-10, abs=1e-12)
    assert a.effective_human_votes == pytest.approx(b.effective_human_votes, rel=1e-10)
    assert (a.n_human, a.n_human_pairs, a.n_judge) == (b.n_human, b.n_human_pairs, b.n_judge)


def test_a_row_per_kind_of_cluster_gives_the_fit_of_a_row_per_cluster():
    """Clusters with the same model pair, votes and verdicts are interchangeable: one row per
    kind with its count as weight fits as one row per cluster (tuned and fixed lambda), and
    ppi_data hands out such rows, a few hundred for thousands of pairs."""
    frame = _alpaca_like(np.random.default_rng(4), 0.5)
    from_frame = ppi_data(frame[frame["judge_type"] == "human"], frame[frame["judge"] == "j"])
    assert len(from_frame.pair) < 50 and from_frame.weight.sum() == frame["pair_id"].nunique() == 1600
    _assert_same_fit(fit_ppi(from_frame), fit_ppi(_expanded(from_frame)))

    data = _replicate(np.random.default_rng(3), informative=True)[0]
    compressed = data.compressed()
    assert len(compressed.pair) <= len(_I) * 2 * 2 * 2 < len(data.pair) / 10  # pair x verdict x labelled x vote
    assert compressed.weight.sum() == len(data.pair)
    for lam in (None, 0.5):
        _assert_same_fit(fit_ppi(compressed, lam), fit_ppi(data, lam))


def test_rounds_fitted_together_are_each_their_own_fit():
    """fit_ppi_rounds (the bootstrap rounds and designs of analysis/judging/worth.py, fitted in
    one batched Newton fit and sandwich) gives every round the fit of its own weights, tuned
    and fixed lambda; a round fit_ppi refuses (no votes, people's votes not connecting a
    model, a model with only wins among them: Newton diverges) holds fit_ppi's error and the
    rounds beside it are unaffected."""
    data = _replicate(np.random.default_rng(5), informative=True)[0].compressed()
    weights = np.random.default_rng(6).poisson(data.weight, size=(9, len(data.weight))).astype(float)
    people, first = data.n_human > 0, data.i[data.pair]  # the lower model of each row's pair
    weights[2, people] = 0  # no human votes
    weights[4, people & (first == 0)] = 0  # model 0 never met by people
    weights[6, people & (first == 0) & (data.y_human < data.n_human)] = 0  # model 0 only won
    for lam in (None, 0.5):
        fits = fit_ppi_rounds(data, weights, lam)
        assert len(fits) == len(weights)
        for w, fit in zip(weights, fits):
            try:
                alone = fit_ppi(replace(data, weight=w), lam)
            except (ValueError, RuntimeError) as exc:
                assert type(fit) is type(exc) and str(fit) == str(exc)
                continue
            _assert_same_fit(fit, alone)
        assert [type(f).__name__ for f in fits[2:7:2]] == ["ValueError", "ValueError", "FitError"]
        thetas = [f.theta for f in fits if not isinstance(f, Exception)]
        assert len(thetas) == 6 and all(np.abs(a - b).max() > 1e-3 for a, b in zip(thetas, thetas[1:]))


def test_compressed_rows_are_the_kinds_in_order_of_first_sight_however_many_values():
    """compressed() keys a row by its columns' codes combined into one number. With 2^13
    values in each of five columns that number has 65 bits: unless renumbered before it
    overflows, the row (value 2^12 in the first column, value 0 in the others) would take
    row 0's key. The kinds must be exactly the distinct rows, in order of first sight, with
    their weights summed."""
    n = 2**13
    fields = ("n_judge", "yhat_judge", "n_human", "y_human", "yhat_human")
    rows = np.r_[np.arange(n), 0]  # per column, the index of its value per row; the last row
    first_column = np.r_[np.arange(n), n // 2]  # differs from row 0 in the first column only
    order = np.r_[np.arange(n + 1), np.random.default_rng(7).permutation(n + 1)]  # each row twice
    values = {f: (first_column if f == "n_judge" else rows).astype(float)[order] + 0.5 for f in fields}
    data = PPIData(models=pd.Index(["a", "b"]), i=np.array([0]), j=np.array([1]),
                   pair=np.zeros(len(order), dtype=np.int64), **values, weight=np.ones(len(order)))
    kinds = data.compressed()
    assert len(kinds.pair) == n + 1
    for f in fields:
        np.testing.assert_array_equal(getattr(kinds, f), values[f][:n + 1])
    np.testing.assert_array_equal(kinds.weight, np.full(n + 1, 2.0))


def test_a_singular_information_fails_its_round_only():
    """Inverting the rounds' information matrices together, a singular one is that round's
    error (one fit raises numpy's LinAlgError there) and the others are their own inverses."""
    data = _replicate(np.random.default_rng(8), informative=True)[0].compressed()
    rng = np.random.default_rng(9)
    x = rng.normal(size=(3, _M, _M))
    information = x @ x.transpose(0, 2, 1)
    information[1] = -np.ones((_M, _M))  # lifted by 1 1^T: zero
    inverses, errors = _inverses(data, information)
    assert list(errors) == [1] and isinstance(errors[1], np.linalg.LinAlgError)
    for r in (0, 2):
        np.testing.assert_allclose(inverses[r], _inverses(data, information[r:r + 1])[0][0], rtol=1e-12)
