"""The PandaLM report, number by number, against a computation written here from the raw JSON.

Nothing from ``analysis`` is used for the expected values: the three JSON files are read
with ``json``, items are keyed by (test item, sorted texts), and every quantity is counted in
plain Python loops. Regressions that need a solver use statsmodels directly on a design
built here; bootstrap intervals are recomputed with this file's own resampling (another
seed), so they match within Monte Carlo error.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import warnings
from collections import Counter, defaultdict

import numpy as np
import pytest

from analysis.report import main

Z = 1.959963984540054
ANNOTATORS = ("annotator1", "annotator2", "annotator3")


def wilson(k, n):
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return [centre - half, centre + half]


@pytest.fixture(scope="module")
def raw(shared_data):
    """Votes from the raw files: rater -> list of dicts (voter, key, first, second, models, pick)."""
    folder = shared_data / "pandalm"
    testset = json.loads((folder / "testset-v1.json").read_text())
    gpt = {x["idx"]: x["gpt_result"] for x in json.loads((folder / "gpt-3.5-turbo-testset-v1.json").read_text())}
    panda = {x["idx"]: x["pandalm_result"] for x in json.loads((folder / "pandalm-7b-testset-v1.json").read_text())}
    votes = defaultdict(list)
    converted, garbage = [], 0
    for item in testset:
        if any(isinstance(item[k], bool) for k in ("response1", "response2")):
            # Six answers "True" are stored as JSON true: read as that text, and reported.
            converted.append(item["idx"])
            item = {**item, **{k: str(item[k]) for k in ("response1", "response2") if isinstance(item[k], bool)}}
        prompt = item["instruction"] if not item["input"] else item["instruction"] + "\n\n" + item["input"]
        first, second = item["response1"], item["response2"]
        m1, m2 = item["cmp_key"].split("_", 1)
        # One item per test item: texts repeat across items, and a key of texts merged them.
        # The cluster every interval treats as independent: the prompt (170 of them, 1-10 items each).
        base = {"key": (item["idx"], min(first, second), max(first, second)), "prompt": prompt,
                "texts": (prompt, min(first, second), max(first, second)), "first": first, "second": second, "m1": m1, "m2": m2}

        def pick(code):  # the winning text, or None for a tie
            return {0: None, 1: first, 2: second}[code]

        for a in ANNOTATORS:
            votes["human"].append({**base, "voter": a, "pick": pick(item[a])})
        g = {"1": 1, "2": 2, "Tie": 0}.get(gpt[item["idx"]])
        if g is None:
            garbage += 1
        else:
            votes["gpt-3.5-turbo"].append({**base, "voter": "gpt-3.5-turbo", "pick": pick(g)})
        votes["pandalm-7b"].append({**base, "voter": "pandalm-7b", "pick": pick(int(panda[item["idx"]]))})
    return {"votes": votes, "converted": converted, "garbage": garbage}


@pytest.fixture(scope="module")
def report(tmp_path_factory, shared_data):
    out = tmp_path_factory.mktemp("pandalm")
    assert main(["--votes", str(shared_data / "pandalm"), "--out", str(out), "--quiet", "--rating-bootstrap", "50"]) == 0
    return json.loads((out / "report.json").read_text()), out


RATERS = ("human", "gpt-3.5-turbo", "pandalm-7b")


def test_raters_counts_and_reported_problems(raw, report):
    data, _ = report
    assert set(data["judges"]) == set(RATERS) | {"panel"}  # the panel pools the two LLM judges
    for rater in RATERS:
        assert data["judges"][rater]["n_records"] == len(raw["votes"][rater])
    assert data["judges"]["gpt-3.5-turbo"]["n_parse_errors"] == raw["garbage"]
    assert sorted(raw["converted"]) == [157, 158, 159, 161, 162, 164]
    for idx in raw["converted"]:
        assert any(f"idx {idx}: kept" in issue and "bool" in issue for issue in data["issues"])


def _clustered_ci(items):
    """The rate's interval when items (pairs) carry several verdicts: this file's own pair
    bootstrap; Wilson's when every item holds one verdict."""
    sums = np.array(list(items.values()), dtype=float)
    if sums[:, 1].max() <= 1:
        return wilson(sums[:, 0].sum(), sums[:, 1].sum())
    return _bootstrap(sums, [(0, 1)])[0]


@pytest.mark.parametrize("rater", RATERS)
def test_position(raw, report, rater):
    got = report[0]["judges"][rater]["position"]
    votes = raw["votes"][rater]
    decisive = [v for v in votes if v["pick"] is not None]
    first = sum(v["pick"] == v["first"] for v in decisive)
    assert got["first_rate"] == pytest.approx(first / len(decisive), abs=1e-12)
    # Three annotators per pair and 1-10 pairs a prompt: the interval resamples prompts.
    per_item = defaultdict(lambda: [0, 0])
    for v in decisive:
        per_item[v["prompt"]][0] += v["pick"] == v["first"]
        per_item[v["prompt"]][1] += 1
    assert got["first_rate_ci"] == pytest.approx(_clustered_ci(per_item), abs=0.01)
    naive = wilson(first, len(decisive))
    if rater == "human":  # wider than the interval that took the 2,657 votes as independent
        assert got["first_rate_ci"][1] - got["first_rate_ci"][0] > 1.4 * (naive[1] - naive[0])
    # The same prompt and model pair in both orders: PandaLM shows every model pair in one
    # fixed order, so no pair is seen swapped; texts shared by two items do not count.
    groups = defaultdict(list)
    for v in votes:
        groups[(v["voter"], v["key"], frozenset((v["m1"], v["m2"])))].append(v)
    swapped = [g for g in groups.values() if len({v["m1"] for v in g}) == 2]
    assert got["n_swapped_pairs"] == len(swapped) == 0
    assert got["consistency"] is None and got["details"]["preference_fairness"] is None
    details = got["details"]
    assert (details["n_decisive"], details["first_wins"], details["n_records"]) == (len(decisive), first, len(votes))
    # Order fixed by model: the report says so, and gives the rate with strengths held fixed.
    assert got["order_randomised"] is False
    assert details["order"]["minority_share"] == 0.0 and details["order"]["never_first"] == ["pythia-6.9b"]
    lo, hi = got["first_rate_controlled_ci"]
    assert lo < got["first_rate_controlled"] < hi
    # Printed once, naming every rater it applies to.
    warned = re.findall(r"\*\*Warning \(([^)]*)\):\*\* display order is not randomised", (report[1] / "report.md").read_text())
    assert len(warned) == 1 and rater in warned[0].split(", ")


def test_preference_fairness_of_gpt35_follows_shi_et_al(raw, shared_data):
    """Pairs of identical texts seen in both orders (across two test items): -2/35 = -0.057 as
    Shi et al. count a win plus a tie (-2/34 before the six "True" items were read). The
    importer gives each test item its own pair_id, so in the report no PandaLM pair is seen
    in both orders; here records are grouped by their texts, as Shi et al. would."""
    import dataclasses

    from row_reader import import_paths
    from analysis.bias.position import position_bias
    from analysis.judgment_table import judgment_table
    from pairlab.records import make_pair_id

    groups = defaultdict(list)
    for v in raw["votes"]["gpt-3.5-turbo"]:
        groups[v["texts"]].append(v)
    primacy = recency = swapped = 0
    for g in groups.values():
        if len({v["first"] == v["texts"][1] for v in g}) < 2:
            continue
        swapped += 1
        if len({v["pick"] for v in g}) == 1:
            continue
        positions = {"first" if v["pick"] == v["first"] else "second" for v in g if v["pick"] is not None}
        primacy += positions == {"first"}
        recency += positions == {"second"}
    assert (swapped, primacy, recency) == (35, 5, 3)
    # Ours, with each text standing for its own "model" so that the text order is the shown order.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = import_paths([shared_data / "pandalm"]).records
    by_texts = [dataclasses.replace(r, pair_id=make_pair_id(r.prompt, r.response_a, r.response_b)) for r in records]
    table, _ = judgment_table(by_texts)
    rows = table[table["rater"] == "gpt-3.5-turbo"]
    rows = rows.assign(model_a=np.where(rows["flip"], "text 2", "text 1"), model_b=np.where(rows["flip"], "text 1", "text 2"))
    est = position_bias(rows)
    assert (est.n_swapped_pairs, est.n_first_biased, est.n_second_biased) == (35, 5, 3)
    assert est.preference_fairness == pytest.approx(-2 / 35) == pytest.approx(-0.0571, abs=1e-4)


def _length_sd(raw):
    diffs = [len(v["first"]) - len(v["second"]) for r in RATERS for v in raw["votes"][r]]
    mean = sum(diffs) / len(diffs)
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / len(diffs))


@pytest.mark.parametrize("rater", RATERS)
def test_length(raw, report, rater):
    import statsmodels.api as sm

    data = report[0]
    got = data["judges"][rater]["length"]
    decisive = [v for v in raw["votes"][rater] if v["pick"] is not None]
    unequal = [v for v in decisive if len(v["first"]) != len(v["second"])]
    longer = sum(v["pick"] == max(v["first"], v["second"], key=len) for v in unequal)
    assert got["longer_rate"] == pytest.approx(longer / len(unequal), abs=1e-12)
    per_item = defaultdict(lambda: [0, 0])
    for v in unequal:
        per_item[v["prompt"]][0] += v["pick"] == max(v["first"], v["second"], key=len)
        per_item[v["prompt"]][1] += 1
    assert got["longer_rate_ci"] == pytest.approx(_clustered_ci(per_item), abs=0.01)
    # Logistic model: intercept, standardised length difference, +1/-1 model columns.
    sd = _length_sd(raw)
    assert data["length_sd_chars"] == pytest.approx(sd, rel=1e-12)
    models = sorted({v["m1"] for v in decisive} | {v["m2"] for v in decisive})[1:]
    X, y, groups = [], [], []
    keys = {}
    for v in decisive:
        row = [1.0, (len(v["first"]) - len(v["second"])) / sd]
        row += [(v["m1"] == m) - (v["m2"] == m) for m in models]
        X.append(row)
        y.append(1.0 if v["pick"] == v["first"] else 0.0)
        groups.append(keys.setdefault(v["prompt"], len(keys)))
    fit = sm.GLM(np.array(y), np.array(X), family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": np.array(groups)}
    )
    assert got["coef"] == pytest.approx(fit.params[1], abs=1e-6)
    lo, hi = fit.params[1] - Z * fit.bse[1], fit.params[1] + Z * fit.bse[1]
    assert got["details"]["coef_ci"] == pytest.approx([lo, hi], abs=1e-6)
    assert got["details"]["coef_p"] == pytest.approx(fit.pvalues[1], rel=1e-4)
    assert (got["details"]["n_fit"], got["details"]["n_decisive_unequal"], got["details"]["longer_wins"]) == (
        len(decisive), len(unequal), longer)
    # The curve: longer-wins rate in bins of |len1 - len2| / (len1 + len2).
    edges = [0.0, 0.1, 0.25, 0.5, 1.0]
    for b, (lo_edge, hi_edge) in zip(got["curve"], zip(edges, edges[1:])):
        inside = [
            v for v in unequal
            if lo_edge <= abs(len(v["first"]) - len(v["second"])) / (len(v["first"]) + len(v["second"]))
            and (abs(len(v["first"]) - len(v["second"])) / (len(v["first"]) + len(v["second"])) < hi_edge or hi_edge == 1.0)
        ]
        won = sum(v["pick"] == max(v["first"], v["second"], key=len) for v in inside)
        assert (b["lo"], b["hi"], b["n"]) == (lo_edge, hi_edge, len(inside))
        if inside:
            assert b["longer_rate"] == pytest.approx(won / len(inside), abs=1e-12)
            cells = defaultdict(lambda: [0, 0])
            for v in inside:
                cells[v["prompt"]][0] += v["pick"] == max(v["first"], v["second"], key=len)
                cells[v["prompt"]][1] += 1
            assert b["ci"] == pytest.approx(_clustered_ci(cells), abs=0.015)


def _bootstrap(sums, ratios, reps=2000, seed=12345):
    """Percentile intervals of ratios of column totals, resampling rows (items) with replacement."""
    rng = random.Random(seed)
    k = len(sums)
    draws = [[] for _ in ratios]
    for _ in range(reps):
        tot = sums[[rng.randrange(k) for _ in range(k)]].sum(axis=0)
        for out, (num, den) in zip(draws, ratios):
            out.append(tot[num] / tot[den])
    return [[sorted(d)[int(0.025 * reps)], sorted(d)[int(0.975 * reps) - 1]] for d in draws]


def _judge_item_verdicts(votes):
    """One verdict per item: the judge's unanimous pick over its records, else a tie."""
    picks = defaultdict(set)
    for v in votes:
        picks[v["key"]].add(v["pick"])
    return {k: (next(iter(p)) if len(p) == 1 else None) for k, p in picks.items()}


def _category(key, pick):
    """Kappa's three categories: the sorted-first text won, the other text won, a tie."""
    return 0 if pick is None else (1 if pick == key[1] else -1)


def _by_name(v, pick, first_vote):
    """Kappa's three categories with the item oriented by model name (issue 16): the
    alphabetically first model won, the other model won, a tie. One orientation per item, from
    its first vote's model names (an item id can hold two test items: see issue 16, item 6)."""
    f = first_vote[v["key"]]
    x_model = f["m1"] if f["first"] == v["key"][1] else f["m2"]
    y_model = f["m2"] if x_model == f["m1"] else f["m1"]
    category = _category(v["key"], pick)
    return -category if x_model > y_model else category


def _first_votes(votes):
    first = {}
    for v in votes:
        first.setdefault(v["key"], v)
    return first


def _kappa(pairs):
    n = len(pairs)
    p_o = sum(a == b for a, b in pairs) / n
    left, right = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    p_e = sum(left[c] * right[c] for c in set(left) | set(right)) / (n * n)
    return (p_o - p_e) / (1 - p_e)


@pytest.mark.parametrize("judge", ["gpt-3.5-turbo", "pandalm-7b"])
def test_agreement_with_humans(raw, report, judge):
    got = report[0]["judges"][judge]["agreement"]
    verdicts = _judge_item_verdicts(raw["votes"][judge])
    pairs = [
        (_category(v["key"], verdicts[v["key"]]), _category(v["key"], v["pick"]))
        for v in raw["votes"]["human"]
        if v["key"] in verdicts
    ]
    s2 = [(a, b) for a, b in pairs if a != 0 and b != 0]
    assert got["vs"] == "human"
    assert got["n"] == len(pairs)
    assert got["with_ties"] == pytest.approx(sum(a == b for a, b in pairs) / len(pairs), abs=1e-12)
    assert got["without_ties"] == pytest.approx(sum(a == b for a, b in s2) / len(s2), abs=1e-12)
    first = _first_votes(raw["votes"]["human"])
    named = [(_by_name(v, verdicts[v["key"]], first), _by_name(v, v["pick"], first)) for v in raw["votes"]["human"]
             if v["key"] in verdicts]
    assert got["cohen_kappa"] == pytest.approx(_kappa(named), abs=1e-12)
    details = got["details"]
    assert (details["n_without_ties"], details["n_items"]) == (len(s2), len({v["key"] for v in raw["votes"]["human"]} & set(verdicts)))
    # Bootstrap over items, this file's own resampling: equal within Monte Carlo error.
    per_item = defaultdict(lambda: [0, 0, 0, 0])
    for v in raw["votes"]["human"]:
        if v["key"] in verdicts:
            a, b = _category(v["key"], verdicts[v["key"]]), _category(v["key"], v["pick"])
            cell = per_item[v["prompt"]]
            cell[0] += a == b
            cell[1] += 1
            if a and b:
                cell[2] += a == b
                cell[3] += 1
    s1_ci, s2_ci = _bootstrap(np.array(list(per_item.values()), dtype=float), [(0, 1), (2, 3)])
    assert details["with_ties_ci"] == pytest.approx(s1_ci, abs=0.01)
    assert details["without_ties_ci"] == pytest.approx(s2_ci, abs=0.01)


def test_human_human_baseline(raw, report):
    got = report[0]["judges"]["human"]["agreement"]
    by_item = defaultdict(list)
    for v in raw["votes"]["human"]:
        by_item[v["key"]].append(v)
    pairs, named, per_item = [], [], []
    first = _first_votes(raw["votes"]["human"])
    for key, votes in by_item.items():
        cell = [0, 0, 0, 0]
        for i in range(len(votes)):
            for j in range(i + 1, len(votes)):
                if votes[i]["voter"] != votes[j]["voter"]:
                    a, b = _category(key, votes[i]["pick"]), _category(key, votes[j]["pick"])
                    pairs.append((a, b))
                    named.append((_by_name(votes[i], votes[i]["pick"], first), _by_name(votes[j], votes[j]["pick"], first)))
                    cell[0] += a == b
                    cell[1] += 1
                    if a and b:
                        cell[2] += a == b
                        cell[3] += 1
        if cell[1]:
            per_item.append(cell)
    s2 = [(a, b) for a, b in pairs if a != 0 and b != 0]
    assert got["n"] == len(pairs)
    assert got["with_ties"] == pytest.approx(sum(a == b for a, b in pairs) / len(pairs), abs=1e-12)
    assert got["without_ties"] == pytest.approx(sum(a == b for a, b in s2) / len(s2), abs=1e-12)
    # Unordered pairs: both sides share the pooled category shares.
    symmetric = named + [(b, a) for a, b in named]
    assert got["cohen_kappa"] == pytest.approx(_kappa(symmetric), abs=1e-12)
    assert got["details"]["n_items"] == len(per_item)
    s1_ci, s2_ci = _bootstrap(np.array(per_item, dtype=float), [(0, 1), (2, 3)])
    assert got["details"]["with_ties_ci"] == pytest.approx(s1_ci, abs=0.01)
    assert got["details"]["without_ties_ci"] == pytest.approx(s2_ci, abs=0.01)


def test_self_family(raw, report):
    judges = report[0]["judges"]
    assert judges["gpt-3.5-turbo"]["self_family"]["delta"] is None  # no OpenAI responses
    assert judges["human"]["self_family"]["delta"] is None
    got = judges["pandalm-7b"]["self_family"]
    assert got["reference"] == "human"

    def eligible(v):
        return (v["m1"] == "llama-7b") != (v["m2"] == "llama-7b")

    def llama_text(v):
        return v["first"] if v["m1"] == "llama-7b" else v["second"]

    judge = defaultdict(list)
    for v in raw["votes"]["pandalm-7b"]:
        if eligible(v):
            judge[v["key"]].append(v["pick"])
    # Per item: [agree on same-family picks, same-family combos, agree on other, other combos].
    per_item = defaultdict(lambda: [0, 0, 0, 0])
    per_prompt = defaultdict(lambda: np.zeros(4))  # the bootstrap's clusters
    for h in raw["votes"]["human"]:
        if h["pick"] is None or not eligible(h) or h["key"] not in judge:
            continue
        col = 0 if h["pick"] == llama_text(h) else 2
        for pick in judge[h["key"]]:
            per_item[h["key"]][col] += pick == h["pick"]
            per_item[h["key"]][col + 1] += 1
            per_prompt[h["prompt"]][col] += pick == h["pick"]
            per_prompt[h["prompt"]][col + 1] += 1
    sums = np.array(list(per_item.values()), dtype=float)
    t = sums.sum(axis=0)
    delta = t[0] / t[1] - t[2] / t[3]
    assert got["delta"] == pytest.approx(delta, abs=1e-12)
    details = got["details"]
    assert (details["n_pairs"], details["n_same"], details["n_other"]) == (len(per_item), t[1], t[3])
    assert (details["rate_same"], details["rate_other"]) == (pytest.approx(t[0] / t[1]), pytest.approx(t[2] / t[3]))
    # The GLM: agreement ~ 1 + [human pick is llama] + [human pick shown first to the judge].
    import statsmodels.api as sm

    X, y, groups, ids = [], [], [], {}
    judge_votes = defaultdict(list)
    for v in raw["votes"]["pandalm-7b"]:
        if eligible(v):
            judge_votes[v["key"]].append(v)
    for h in raw["votes"]["human"]:
        if h["pick"] is None or not eligible(h) or h["key"] not in judge_votes:
            continue
        for j in judge_votes[h["key"]]:
            X.append([1.0, float(h["pick"] == llama_text(h)), float(h["pick"] == j["first"])])
            y.append(float(j["pick"] == h["pick"]))
            groups.append(ids.setdefault(h["prompt"], len(ids)))
    fit = sm.GLM(np.array(y), np.array(X), family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": np.array(groups)})
    assert details["glm_coef"] == pytest.approx(fit.params[1], abs=1e-6)
    assert details["glm_ci"] == pytest.approx([fit.params[1] - Z * fit.bse[1], fit.params[1] + Z * fit.bse[1]], abs=1e-6)
    assert details["glm_n"] == len(y)
    rng = random.Random(12345)
    clusters = np.array(list(per_prompt.values()))
    k = len(clusters)
    reps = []
    for _ in range(2000):
        tot = clusters[[rng.randrange(k) for _ in range(k)]].sum(axis=0)
        reps.append(tot[0] / tot[1] - tot[2] / tot[3])
    reps.sort()
    expected = [reps[int(0.025 * 2000)], reps[int(0.975 * 2000) - 1]]
    assert got["ci"] == pytest.approx(expected, abs=0.02)


def mm_bradley_terry(battles):
    """Bradley-Terry strengths (summing to 1) by MM (Hunter 2004) from (model a, model b, winner or None) triples;
    a tie (None) is half a win each."""
    models = sorted({m for a, b, _ in battles for m in (a, b)})
    wins = defaultdict(float)
    for a, b, w in battles:
        if w is None:
            wins[(a, b)] += 0.5
            wins[(b, a)] += 0.5
        else:
            wins[(w, b if w == a else a)] += 1.0
    p = {m: 1.0 for m in models}
    for _ in range(3000):
        new = {i: sum(wins[(i, j)] for j in models if j != i)
               / sum((wins[(i, j)] + wins[(j, i)]) / (p[i] + p[j]) for j in models if j != i) for i in models}
        total = sum(new.values())
        p = {m: x / total for m, x in new.items()}
    return p


def test_ratings_and_rank_agreement_match_an_independent_bradley_terry(raw, report):
    """BT point ratings, and Spearman/Kendall between human and judge ratings, with BT fitted here by MM (Hunter 2004)."""
    from scipy.stats import kendalltau, spearmanr

    def bt(votes):
        return mm_bradley_terry([(v["m1"], v["m2"], {v["first"]: v["m1"], v["second"]: v["m2"]}.get(v["pick"]))
                                 for v in votes])

    def elo(p):  # mean 1000, 400 points per factor 10 in the odds
        logs = {m: math.log10(x) for m, x in p.items()}
        mean = sum(logs.values()) / len(logs)
        return {m: 1000 + 400 * (v - mean) for m, v in logs.items()}

    human = bt(raw["votes"]["human"])
    for rater in RATERS:
        table = {row["model"]: row["rating"] for row in report[0]["judges"][rater]["ratings"]["bt"]}
        expected = elo(bt(raw["votes"][rater]))
        assert table == pytest.approx(expected, abs=0.05)
    for judge in ("gpt-3.5-turbo", "pandalm-7b"):
        theirs = bt(raw["votes"][judge])
        models = sorted(human)
        got = report[0]["judges"][judge]["ranking"]
        rho = spearmanr([human[m] for m in models], [theirs[m] for m in models])
        tau = kendalltau([human[m] for m in models], [theirs[m] for m in models])
        assert got["n_models"] == len(models)
        # Five models: the exact permutation p (scipy's t approximation is far off at this n).
        exact = np.mean([abs(spearmanr([human[m] for m in models], p).statistic) >= abs(rho.statistic) - 1e-12
                         for p in itertools.permutations([theirs[m] for m in models])])
        assert (got["spearman"], got["spearman_p"]) == (pytest.approx(rho.statistic), pytest.approx(exact))
        assert (got["kendall"], got["kendall_p"]) == (pytest.approx(tau.statistic), pytest.approx(tau.pvalue))


def test_markdown_and_html_are_written(report):
    _, out = report
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert "| pandalm-7b |" in md and "Zheng et al. 2023" in md
    # Labels that say what the numbers are: style (not length) control, prompt-clustered intervals.
    assert "Bradley-Terry and style-controlled" in md and "length-controlled" not in md
    assert "clustered by prompt (170 prompts)" in md
    # Every interval's label says the report's clustering: none of them reads "by pair" here.
    assert "by pair" not in md and "by pair" not in html
    assert "style element 'headers' differs between the two responses in only 2 pairs" in md
    assert html.count("data:image/png;base64,") >= 4
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")


def test_family_win_rates(raw, report):
    got = report[0]["family_win_rate"]
    family = {"bloom-7b": "bloom", "cerebras-gpt-6.7B": "cerebras", "llama-7b": "llama", "opt-7b": "opt", "pythia-6.9b": "pythia"}
    for rater in RATERS:
        wins, n = Counter(), Counter()
        for v in raw["votes"][rater]:
            if v["pick"] is None or family[v["m1"]] == family[v["m2"]]:
                continue
            for model, text in ((v["m1"], v["first"]), (v["m2"], v["second"])):
                n[family[model]] += 1
                wins[family[model]] += v["pick"] == text
        assert set(got[rater]) == set(n)
        for fam in n:
            assert got[rater][fam]["n"] == n[fam]
            assert got[rater][fam]["rate"] == pytest.approx(wins[fam] / n[fam], abs=1e-12)
            assert got[rater][fam]["ci"] == pytest.approx(wilson(wins[fam], n[fam]), abs=1e-12)
