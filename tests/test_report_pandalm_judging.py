"""The PandaLM report's "judging the judges" numbers, against computations written here.

As in test_report_pandalm.py, expected values come from the raw JSON (its ``raw`` fixture)
in plain Python; regressions use statsmodels' formula API on a design built here; the
leaderboard metrics are recomputed pair by pair from the rating tables report.json holds.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict

import numpy as np
import pytest
from test_report_pandalm import mm_bradley_terry, raw, report  # noqa: F401 - fixtures

FAMILY = {"bloom-7b": "bloom", "cerebras-gpt-6.7B": "cerebras", "llama-7b": "llama", "opt-7b": "opt",
          "pythia-6.9b": "pythia"}
JUDGE_FAMILY = {"gpt-3.5-turbo": "openai", "pandalm-7b": "llama"}
Z = 1.959963984540054


def _picked_model(v):
    return v["m1"] if v["pick"] == v["first"] else v["m2"]


def test_controlled_self_preference(raw, report):
    """Issue 16's model with issue 26's length and markdown terms, written out with statsmodels:
    people's Bradley-Terry strengths (with a first-shown, a length term and a term for each
    markdown element X and Y differ in on 20 pairs or more), then the judge's logit on their gap,
    its position, its length lean (log length of X over Y), its markdown leans and its self term."""
    import statsmodels.api as sm

    from analysis.ratings.style import STYLE_FEATURES
    from style_oracle import style_counts

    def markdown(votes):
        """Per vote, (f_X - f_Y) / (f_X + f_Y + 1) of the headers, list items and bold spans the
        set's pairs differ in on 20 pairs or more (bt-style's plain counter, text by text)."""
        rows = [v for v in votes if v["pick"] is not None]
        counts = [(style_counts(v["key"][1])[1:], style_counts(v["key"][2])[1:]) for v in rows]
        d = np.array([[(x - y) / (x + y + 1) for x, y in zip(cx, cy)] for cx, cy in counts])
        keep = [k for k in range(3) if len({str(v["key"]) for v, dk in zip(rows, d[:, k]) if dk != 0}) >= 20]
        return d[:, keep], [STYLE_FEATURES[1 + k] for k in keep]

    judges = report[0]["judges"]
    models = sorted(FAMILY)

    def design(votes):
        rows, y = [], []
        for v in votes:
            if v["pick"] is None:
                continue
            x_text = v["key"][1]  # the canonical X: the sorted-first text
            x_model = v["m1"] if v["first"] == x_text else v["m2"]
            y_model = v["m2"] if x_model == v["m1"] else v["m1"]
            contrast = np.zeros(len(models))
            contrast[models.index(x_model)] += 1
            contrast[models.index(y_model)] -= 1
            own = (FAMILY[x_model] == "llama") - (FAMILY[y_model] == "llama")
            length = np.log1p(len(v["key"][1])) - np.log1p(len(v["key"][2]))
            rows.append((contrast[1:], 1.0 if v["first"] == x_text else -1.0, own, length))
            y.append(float(v["pick"] == x_text))
        return rows, np.array(y)

    people, y_people = design(raw["votes"]["human"])
    people_style, _ = markdown(raw["votes"]["human"])
    ref = sm.Logit(y_people, np.array([np.r_[c, pos, ln, st] for (c, pos, _, ln), st in zip(people, people_style)])
                   ).fit(disp=False)
    strengths = ref.params[: len(models) - 1]
    judge, y_judge = design(raw["votes"]["pandalm-7b"])
    judge_style, held = markdown(raw["votes"]["pandalm-7b"])
    Z = np.array([(c @ strengths, pos, ln, *st, own) for (c, pos, own, ln), st in zip(judge, judge_style)])
    fit = sm.Logit(y_judge, Z).fit(disp=False)
    got = judges["pandalm-7b"]["self_family"]["controlled"]
    assert got["style"] == held == ["lists"]
    assert got["lean"] == pytest.approx(fit.params[-1], abs=1e-6)
    # The term is that lean less GPT-3.5's lean for LLaMA on the same answers.
    assert got["compared_with"] == ["gpt-3.5-turbo"] and got["coef"] == pytest.approx(got["lean"] - got["shared"])
    assert got["length"] == pytest.approx(fit.params[2], abs=1e-6)
    assert got["slope"] == pytest.approx(fit.params[0], abs=1e-6) and got["position"] == pytest.approx(fit.params[1], abs=1e-6)
    assert got["n_rows"] == len(y_judge)
    assert got["ci"][0] < got["coef"] < got["ci"][1] and got["lean_ci"][0] < got["lean"] < got["lean_ci"][1]
    assert got["ci_by_prompt"] is not None
    assert "slope" in got["specification"]
    # PandaLM-7B's sharpness held fixed, its taste for LLaMA-7B is not distinguishable from 0 (the old
    # shared-family-effects model read it as -0.49, significant).
    assert got["ci"][0] < 0 < got["ci"][1]
    gpt = judges["gpt-3.5-turbo"]["self_family"]["controlled"]
    assert gpt["coef"] is None and "openai" in gpt["note"]
    assert judges["human"]["self_family"]["controlled"] is None


def _twin(judge_rows, ref_rows):
    """Separability, agreement with confidence, Brier and rank correlations, pair by pair."""
    from scipy.stats import kendalltau, spearmanr

    j = {r["model"]: (r["rating"], r["lower"], r["upper"]) for r in judge_rows}
    r = {x["model"]: (x["rating"], x["lower"], x["upper"]) for x in ref_rows}
    models = sorted(set(j) & set(r))

    def overlap(x, y):
        return min(x[2], y[2]) - max(x[1], y[1]) > 0

    sep, agree, brier = [], [], []
    for a, b in itertools.combinations(models, 2):
        sep.append(not overlap(j[a], j[b]))
        if not overlap(r[a], r[b]):
            agree.append(0.5 if overlap(j[a], j[b]) else float((j[a][0] < j[b][0]) == (r[a][0] < r[b][0])))
        sd = math.sqrt(((j[a][2] - j[a][1]) / (2 * Z)) ** 2 + ((j[b][2] - j[b][1]) / (2 * Z)) ** 2)
        p = 0.5 * (1 + math.erf((j[b][0] - j[a][0]) / sd / math.sqrt(2)))
        brier.append((p - float(r[a][0] < r[b][0])) ** 2)
    xs, ys = [j[m][0] for m in models], [r[m][0] for m in models]
    return {"n_models": len(models), "separability": sum(sep) / len(sep), "brier": sum(brier) / len(brier),
            "agreement_ci": sum(agree) / len(agree) if agree else None,
            "spearman": spearmanr(xs, ys).statistic, "kendall": kendalltau(xs, ys).statistic}


@pytest.mark.parametrize("judge", ["gpt-3.5-turbo", "pandalm-7b", "panel"])
def test_leaderboard_meta_metrics(report, judge):
    judges = report[0]["judges"]
    got = judges[judge]["leaderboard"]
    want = _twin(judges[judge]["ratings"]["bt"], judges["human"]["ratings"]["bt"])
    assert got["vs"] == "human" and got["n_models"] == want["n_models"] == 5
    for key in ("separability", "agreement_ci", "brier", "spearman", "kendall"):
        assert got[key] == pytest.approx(want[key], abs=1e-12), key


def _category(key, pick):
    return 0 if pick is None else (1 if pick == key[1] else -1)


def _s1_s2(pairs):
    s2 = [(a, b) for a, b in pairs if a and b]
    return sum(a == b for a, b in pairs) / len(pairs), sum(a == b for a, b in s2) / len(s2)


def _mm_bt(verdicts):
    """Bradley-Terry by MM on (model a, model b, winner or None) triples, on the Elo scale (mean 1000)."""
    logs = {m: math.log10(x) for m, x in mm_bradley_terry(verdicts).items()}
    mean = sum(logs.values()) / len(logs)
    return {m: 1000 + 400 * (v - mean) for m, v in logs.items()}


@pytest.mark.parametrize("judge", ["gpt-3.5-turbo", "pandalm-7b"])
def test_variants(raw, report, judge):
    entry = report[0]["judges"][judge]
    v = entry["variants"]
    by_key = defaultdict(list)
    for h in raw["votes"]["human"]:
        by_key[h["key"]].append(h)
    # As given: one verdict per pair and order (the most frequent there), scored by the share of people's
    # votes on the pair it matches; every pair and order counts once.
    per_order = defaultdict(Counter)
    for j in raw["votes"][judge]:
        per_order[(j["key"], j["first"] == j["key"][1])][_category(j["key"], j["pick"])] += 1
    s1_same = s1_total = s2_same = s2_total = 0.0
    for (key, _), counts in per_order.items():
        a = counts.most_common(1)[0][0]
        hs = [_category(key, h["pick"]) for h in by_key[key]]
        if not hs:
            continue
        s1_same += sum(a == h for h in hs) / len(hs)
        s1_total += 1
        if a != 0:
            s2_same += sum(a == h for h in hs if h != 0) / len(hs)
            s2_total += sum(h != 0 for h in hs) / len(hs)
    assert v["as_given"]["with_ties"] == pytest.approx(s1_same / s1_total)
    assert v["as_given"]["without_ties"] == pytest.approx(s2_same / s2_total)
    # PandaLM's judges saw each pair in one order: as given is scored as the agreement table (every
    # verdict against every vote; three votes a pair, so the same shares as above).
    assert v["as_given"]["n"] == entry["agreement"]["n"] == 3 * round(s1_total)
    # Both orders: the judge's one unanimous verdict per pair, as in the agreement section.
    assert v["both_orders"]["with_ties"] == pytest.approx(entry["agreement"]["with_ties"])
    assert v["both_orders"]["without_ties"] == pytest.approx(entry["agreement"]["without_ties"])
    picks = defaultdict(set)
    lead = {}  # a repeated item is rated with its first record's model names
    for j in raw["votes"][judge]:
        picks[j["key"]].add(j["pick"])  # the winning text, or None for a tie
        lead.setdefault(j["key"], j)
    verdicts = []
    for k, p in picks.items():
        text = next(iter(p)) if len(p) == 1 else None
        first = lead[k]
        verdicts.append((first["m1"], first["m2"],
                         None if text is None else (first["m1"] if text == first["first"] else first["m2"])))
    points = _mm_bt(verdicts)
    table = {r["model"]: r["rating"] for r in v["both_orders"]["ratings"]}
    assert table == pytest.approx(points, abs=0.05)
    human_bt = report[0]["judges"]["human"]["ratings"]["bt"]
    human_sc = report[0]["judges"]["human"]["ratings"]["style_controlled"]  # the matching target of style control
    for name in ("as_given", "both_orders", "style_controlled"):
        want = _twin(v[name]["ratings"], human_sc if name == "style_controlled" else human_bt)
        assert v[name]["spearman"] == pytest.approx(want["spearman"], abs=1e-12), name
        assert v[name]["brier"] == pytest.approx(want["brier"], abs=1e-12), name
    assert v["style_controlled"]["ratings"] == entry["ratings"]["style_controlled"] or all(
        a["model"] == b["model"] and a["rating"] == pytest.approx(b["rating"])
        for a, b in zip(v["style_controlled"]["ratings"], entry["ratings"]["style_controlled"]))
    assert v["calibrated"]["with_ties"] is None and v["calibrated"]["note"] == "the records carry no prob_a"
    assert v["style_controlled"]["with_ties"] is None
    assert set(entry["best_variant"]) >= {"with_ties", "without_ties", "brier"}


def test_panel(raw, report):
    judges = report[0]["judges"]
    panel = judges["panel"]
    votes = defaultdict(lambda: defaultdict(set))
    for judge in JUDGE_FAMILY:
        for j in raw["votes"][judge]:
            votes[j["key"]][judge].add(_category(j["key"], j["pick"]))
    verdict = {}
    for key, members in votes.items():
        if len(members) < 2:
            continue
        # One vote per member: its verdict when all its records on the pair agree, else a tie.
        (top, n), *rest = Counter(next(iter(c)) if len(c) == 1 else 0 for c in members.values()).most_common()
        verdict[key] = 0 if rest and rest[0][1] == n else top
    assert panel["n_records"] == len(verdict) and panel["panel_members"] == sorted(JUDGE_FAMILY)
    pairs = [(verdict[h["key"]], _category(h["key"], h["pick"])) for h in raw["votes"]["human"] if h["key"] in verdict]
    s1, s2 = _s1_s2(pairs)
    assert panel["agreement"]["with_ties"] == pytest.approx(s1) and panel["agreement"]["without_ties"] == pytest.approx(s2)
    assert panel["agreement"]["n"] == len(pairs)
    # The panel's leaderboard: BT on its verdicts, checked against MM.
    first = {}  # the first LLM record on each pair (records are read GPT-3.5 first) gives the panel's models
    for j in raw["votes"]["gpt-3.5-turbo"] + raw["votes"]["pandalm-7b"]:
        first.setdefault(j["key"], j)
    triples = [(first[k]["m1"], first[k]["m2"],
                None if c == 0 else (first[k]["m1"] if (c == 1) == (first[k]["first"] == k[1]) else first[k]["m2"]))
               for k, c in verdict.items()]
    assert {r["model"]: r["rating"] for r in panel["ratings"]["bt"]} == pytest.approx(_mm_bt(triples), abs=0.05)


_CODE = re.compile(r"```.*?```", re.DOTALL)
_MARKUP = [re.compile(r"^#{1,6}\s", re.M), re.compile(r"^\s*(?:\d+\.|[-*+])\s", re.M),
           re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")]


def _structure(text):
    prose = _CODE.sub("", text)
    return sum(len(p.findall(prose)) for p in _MARKUP)


@pytest.mark.parametrize("rater", ["human", "gpt-3.5-turbo", "pandalm-7b"])
def test_annotator_cards(raw, report, rater):
    card = report[0]["judges"][rater]["annotator"]
    used = [v for v in raw["votes"][rater] if v["pick"] is not None and _structure(v["first"]) != _structure(v["second"])]
    won = sum(v["pick"] == max(v["first"], v["second"], key=_structure) for v in used)
    assert card["n_structure"] == len(used)
    assert card["prefers_structure"] == pytest.approx(won / len(used), abs=1e-12)
    failures = raw["garbage"] if rater == "gpt-3.5-turbo" else 0
    outputs = len(raw["votes"][rater]) + failures
    assert card["n_outputs"] == outputs and card["parse_failure_rate"] == pytest.approx(failures / outputs)
    assert card["seconds_per_1000"] is None and "no judges.run manifest" in card["note"]


def test_new_sections_are_rendered(report):
    _, out = report
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    for text in ("Self-preference with model strength held fixed", "agreement with confidence", "Annotator cards",
                 "Judge panel", "| pandalm-7b | as_given |"):
        assert text in md, text
    for anchor in ('id="self-preference"', 'id="leaderboards"', 'id="variants"', 'id="panel"', 'id="annotators"',
                   'alt="judge vs reference ratings"'):
        assert anchor in html, anchor
    assert np.isfinite(float(re.search(r"\| pandalm-7b \| llama \| human \| [-0-9.]+ \[[^]]+\] \| \*\*(-?[0-9.]+)\*\*",
                                       md).group(1)))
