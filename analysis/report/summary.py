"""The answer the report opens with: one short block per judge, before any table.

How often the judge agrees with people (with and without ties) beside how often people
agree with each other; how many human votes it is worth (:mod:`analysis.judging.worth`);
its strongest bias with its size (self-family only from the controlled term of
:mod:`analysis.bias.self_preference`, never the raw gap); and one sentence a user can act on. Without people the
block says so and gives what can still be said: position consistency and length preference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.judging.panel import PANEL
from analysis.judging.worth import JudgeWorth
from analysis.judgment_table import HUMAN_RATER
from analysis.report.estimates import BiasReport, RaterReport
from analysis.report.formatting import fmt_ci, lean, no_order_note, pct as _pct, pct_ci as _pct_ci

__all__ = ["FOLLOWS_POSITION", "Finding", "SummaryBlock", "advice", "bias_scale", "even_choice", "follows_position",
           "strongest_bias", "summary_blocks", "summary_json"]

FOLLOWS_POSITION = "its verdicts follow the display order, not the answers: do not use them"
# "Near 0": a judge that reads the answers and flips a coin on close calls keeps its verdict on about
# half the swapped pairs; one that picks a position keeps it on none.
_FOLLOWS_MAX_CONSISTENCY = 0.2
_FOLLOWS_MIN_PAIRS = 3


@dataclass(frozen=True)
class Finding:
    """A bias as a share of decisive verdicts against its no-bias value (in points of 100%)."""

    kind: str
    text: str
    size: float  # signed gap from no bias, as a share
    ci: tuple[float, float]


@dataclass(frozen=True)
class SummaryBlock:
    judge: str
    has_people: bool
    lines: tuple[str, ...]
    action: str
    agreement: dict | None
    worth: dict | None
    bias: Finding | None
    advice: str = ""  # the action in a few words, for the opening table


def even_choice(log_odds: float) -> float:
    """A logit term as its change to an even (50%) choice, as a share: the one scale the
    opening compares biases on."""
    return float(1 / (1 + np.exp(-log_odds)) - 0.5)


def bias_scale(length_sd: float | None) -> str:
    """How :func:`strongest_bias` puts every bias on one scale, in words."""
    per = f"per standard deviation ({length_sd:.0f} characters)" if length_sd else "per standard deviation"
    return ("each bias in points away from an even choice between two equally strong answers (logit terms with "
            f"model strength held fixed: position between answers of equal length, length {per} of length "
            "difference, self-family as the controlled term)")


def _excludes_zero(ci) -> bool:
    return ci is not None and not ci[0] <= 0 <= ci[1]


def strongest_bias(r: RaterReport, people: RaterReport | None = None) -> Finding | None:
    """The largest bias whose 95% interval excludes no bias, every one on one scale
    (:func:`even_choice` of a logit term with model strength held fixed, :func:`bias_scale`):
    position (the length model's first-shown term), length (the length coefficient, against
    people's where people voted) and self-family (the controlled term). The raw first-shown
    rate is diluted by clear pairs, which no position lean can turn, so it only describes."""
    found = []
    p, ln = r.position, r.length
    if _has_position(r) and ln.first_rate_controlled is not None and ln.first_rate_controlled_ci:
        size = ln.first_rate_controlled - 0.5
        ci = (ln.first_rate_controlled_ci[0] - 0.5, ln.first_rate_controlled_ci[1] - 0.5)
        if _excludes_zero(ci):
            side = "first" if p.first_rate > 0.5 else "second"
            rate = p.first_rate if side == "first" else 1 - p.first_rate
            rate_ci = p.first_rate_ci if side == "first" else (1 - p.first_rate_ci[1], 1 - p.first_rate_ci[0])
            toward = "first" if size > 0 else "second"
            found.append(Finding("position", f"picks the {side}-shown response in {_pct(rate)} {_pct_ci(rate_ci)} "
                                 f"of its decisive verdicts (50% without position bias); between equally strong "
                                 f"answers of equal length it leans {lean(size, ci)} toward the {toward}-shown one",
                                 size, ci))
    base = people.length if people is not None else None
    if base is not None:
        if ln.coef is not None and ln.coef_ci and base.coef is not None and base.coef_ci:
            # People prefer longer answers too: a judge's length bias is its gap from them. The gap's
            # interval adds the two intervals' half-widths in quadrature (as if independent).
            gap = ln.coef - base.coef
            half = float(np.hypot(*(np.diff(ci)[0] / 2 for ci in (ln.coef_ci, base.coef_ci))))
            ci = (even_choice(gap - half), even_choice(gap + half))
            if _excludes_zero(ci):
                rates = ("" if ln.longer_rate is None or base.longer_rate is None else
                         f"picks the longer response in {_pct(ln.longer_rate)} of its decisive verdicts, people in "
                         f"{_pct(base.longer_rate)}; ")
                found.append(Finding("length", f"{rates}with model strength held fixed, its length coefficient is "
                                     f"{ln.coef:.2f} against people's "
                                     f"{base.coef:.2f}: {'more' if gap > 0 else 'less'} length preference than "
                                     f"people by {lean(even_choice(gap), ci)}", even_choice(gap), ci))
    elif ln.coef is not None and ln.coef_ci:  # no people: the block's line above gives the raw longer-wins rate
        ci = (even_choice(ln.coef_ci[0]), even_choice(ln.coef_ci[1]))
        if _excludes_zero(ci):
            side = "longer" if ln.coef > 0 else "shorter"
            found.append(Finding("length", f"leans {lean(even_choice(ln.coef), ci)} toward the {side} answer with "
                                 "model strength held fixed (no length preference: 0)", even_choice(ln.coef), ci))
    # Self-family only from the controlled term (strength, sharpness, position and length held
    # fixed): the raw agreement gap mistakes a strong family, or a sharp judge, for a biased one.
    c = r.controlled
    if c is not None and c.coef is not None and c.ci and c.flagged:  # Holm-adjusted over the judges
        ci = (even_choice(c.ci[0]), even_choice(c.ci[1]))
        toward = "toward" if c.coef > 0 else "away from"
        found.append(Finding("self-family", f"leans {toward} its own family's ({r.family}) responses: {c.coef:+.2f} "
                             f"log-odds [{c.ci[0]:+.2f}, {c.ci[1]:+.2f}] with model strength, its sharpness, position "
                             f"and length lean held fixed"
                             + (", beyond the other judges' lean for that family" if c.shared is not None else "")
                             + f": {lean(even_choice(c.coef), ci)}", even_choice(c.coef), ci))
    return max(found, key=lambda f: abs(f.size), default=None)


def _has_position(r: RaterReport) -> bool:
    # A panel's, order-averaged or likelihood verdicts never saw a display order: no position number.
    return r.position.display_order and r.position.first_rate is not None and bool(r.position.first_rate_ci)


def _measured(r: RaterReport, people: RaterReport | None) -> str:
    """Which of the three biases :func:`strongest_bias` could measure (their intervals include no
    bias) and which it could not: a panel has no display order, a judge without an own-family pair
    no self-family term, and "none detected" must not claim those were checked."""
    base = people.length if people is not None else None
    ln = r.length
    has = {"position": _has_position(r) and ln.first_rate_controlled is not None and bool(ln.first_rate_controlled_ci),
           "length": ln.coef is not None and bool(ln.coef_ci)
           and (base is None or (base.coef is not None and bool(base.coef_ci))),
           "controlled self-family": r.controlled is not None and r.controlled.coef is not None
           and bool(r.controlled.ci)}
    done = [k for k, ok in has.items() if ok]
    missing = [k for k, ok in has.items() if not ok]
    text = (f"{' and '.join(done) if len(done) < 3 else 'position, length and controlled self-family'} "
            f"interval{'s' if len(done) > 1 else ''} {'all ' if len(done) > 2 else ''}"
            f"include{'' if len(done) > 1 else 's'} no bias") if done else "no bias could be measured"
    return text + (f"; not measured: {', '.join(missing)}" if missing and done else "")


def follows_position(r: RaterReport) -> bool:
    """Does the judge name the same winner in both orders on (almost) no pair shown both ways?"""
    p = r.position
    return (p.consistency is not None and p.n_swapped_pairs >= _FOLLOWS_MIN_PAIRS
            and p.consistency <= _FOLLOWS_MAX_CONSISTENCY)


def _follows_line(r: RaterReport, members: list[RaterReport]) -> str | None:
    """The opening warning for a judge (or a panel whose every member) that follows position."""
    if follows_position(r):
        p = r.position
        return (f"Position: the same verdict in both orders on {_pct(p.consistency)} of {p.n_swapped_pairs} pairs "
                f"shown both ways: {FOLLOWS_POSITION} (judges.run's OUT.pairs.jsonl holds its order-averaged "
                "verdicts, the only reading of it worth a look).")
    if members and all(follows_position(m) for m in members):
        return (f"Position: every member ({', '.join(m.rater for m in members)}) names the same winner in both "
                f"orders on almost no pair, so {FOLLOWS_POSITION}.")
    return None


def _length_lean(r: RaterReport, people: RaterReport | None) -> str:
    """The judge's own length coefficient when it excludes 0, beside people's: a lean people share is
    no bias against them, but the reader should still see it."""
    ln = r.length
    if ln.coef is None or not ln.coef_ci or ln.coef_ci[0] <= 0 <= ln.coef_ci[1]:
        return ""
    text = (f" It does prefer {'longer' if ln.coef > 0 else 'shorter'} responses (length coefficient "
            f"{ln.coef:.2f} [{ln.coef_ci[0]:.2f}, {ln.coef_ci[1]:.2f}])")
    base = people.length if people is not None else None
    if base is not None and base.coef is not None and base.coef_ci:
        text += (f"; people's is {base.coef:.2f} [{base.coef_ci[0]:.2f}, {base.coef_ci[1]:.2f}]: a lean people "
                 "share is not counted as bias against them")
    return text + "."


def _one(value, ci) -> str:
    return "-" if value is None else f"{_pct(value)} {_pct_ci(ci)}" if ci else _pct(value)


def _kappa(a) -> str:
    if a.cohen_kappa is None:
        return "Cohen's kappa -"
    ci = "" if not a.cohen_kappa_ci else f" [{a.cohen_kappa_ci[0]:.2f}, {a.cohen_kappa_ci[1]:.2f}]"
    return f"Cohen's kappa {a.cohen_kappa:.2f}{ci}"


def _agreement(r: RaterReport, people: RaterReport | None) -> tuple[str, dict]:
    """Agreement with people, led by the number that does not flatter the judge: every vote pair,
    ties counted, with kappa beside it. Decisive pairs only come second, with their share: a judge
    that ties on the hard pairs keeps only the easy ones there, where people agree more too."""
    a = r.agreement
    base = people.agreement if people else None
    decisive = f"{_pct(a.n_without_ties / a.n)} of vote pairs" if a.n else "vote pairs"
    text = (f"Agrees with people on {_one(a.with_ties, a.with_ties_ci)} of vote pairs, ties counted ({_kappa(a)}); "
            f"on the {decisive} where neither side tied, on {_one(a.without_ties, a.without_ties_ci)}")
    same = r.agreement_same_pairs
    if base is not None and base.with_ties is not None and same is not None and same.with_ties is not None:
        # People's agreement with each other exists only where two or more people voted: the
        # judge is compared with it on those same pairs, not on all of its own.
        # People's agreement rests on all their pairs, which may be more than the judge's (parse failures).
        theirs = "" if base.n_items == same.n_items else f" on their {base.n_items} pairs"
        text += (f". On the {same.n_items} pairs two or more people voted on, it agrees with them on "
                 f"{_one(same.with_ties, same.with_ties_ci)} ({_kappa(same)}) and people agree with each other on "
                 f"{_one(base.with_ties, base.with_ties_ci)}{theirs} ({_kappa(base)}), ties counted; without ties "
                 f"{_one(same.without_ties, same.without_ties_ci)} and {_one(base.without_ties, base.without_ties_ci)}")
    data = {"without_ties": a.without_ties, "without_ties_ci": a.without_ties_ci, "with_ties": a.with_ties,
            "with_ties_ci": a.with_ties_ci, "cohen_kappa": a.cohen_kappa, "cohen_kappa_ci": a.cohen_kappa_ci,
            "people_without_ties": base.without_ties if base else None,
            "people_without_ties_ci": base.without_ties_ci if base else None,
            "people_with_ties": base.with_ties if base else None,
            "people_with_ties_ci": base.with_ties_ci if base else None,
            "people_cohen_kappa": base.cohen_kappa if base else None,
            "people_cohen_kappa_ci": base.cohen_kappa_ci if base else None, "n": a.n,
            "n_without_ties": a.n_without_ties,
            "same_pairs_without_ties": same.without_ties if same else None,
            "same_pairs_without_ties_ci": same.without_ties_ci if same else None,
            "same_pairs_n_items": same.n_items if same else None}
    return text + ".", data


def _worth_line(w: JudgeWorth) -> str:
    ci = "" if w.effective_ci is None else f" {fmt_ci(w.effective_ci, 0)}"
    # The design may be a subsample of people's pairs (people voted on most of them): say so, or the
    # numbers read as if people had voted on fewer pairs than the data hold.
    # People's sample is named after the ratings, not after "the judge on all of them", where its
    # count read as the judge's.
    text = (f"Worth: with {w.design}, the ratings are as precise as {w.effective_votes:.0f}{ci} human votes alone, "
            f"from people's {w.n_human:.0f} votes on {w.n_human_pairs} pairs: each vote counts {w.ratio:.2f}x"
            + ("" if w.ratio_ci is None else f" {fmt_ci(w.ratio_ci, 2)}") + ".")
    if w.no_interval:
        text += f" No interval: {w.no_interval}."
    if w.per_model is not None:
        # The average hides models the judge does not help: say how many it narrows, per model.
        widths = ", ".join(f"{m} {r:.2f}x" for m, r in zip(w.per_model["model"], w.per_model["width_ratio"]))
        text += (f" Its weight is tuned per model: it narrows {w.n_narrowed} of {len(w.per_model)} models' "
                 f"intervals (width with the judge over people's alone: {widths}).")
    return text


# Worth whose interval reaches no higher than this adds little: at best a tenth more per vote.
LITTLE = 1.1


def _savings(w: JudgeWorth) -> str:
    """Votes saved per model for the same interval (1 - width ratio squared: width goes as one over
    the root of the votes), and the model an average rests on when it is carried by one."""
    if w.per_model is None or not len(w.per_model):
        return f"about {_pct(1 - 1 / w.ratio)} fewer votes for the mean interval width over models"
    saved = sorted(zip(w.per_model["model"], 1 - w.per_model["width_ratio"] ** 2), key=lambda x: -x[1])
    each = ", ".join(f"{m} {100 * v:.0f}%" for m, v in saved)
    text = f"fewer votes by model: {each} (about {_pct(1 - 1 / w.ratio)} for the mean interval width over models"
    (top, most), rest = saved[0], [v for _, v in saved[1:]]
    if rest and most > 0 and max(rest) < most / 2:
        text += f", carried by {top}: the other models save {100 * min(rest):.0f}-{100 * max(rest):.0f}%"
    return text + ")"


def _narrows(w: JudgeWorth) -> str:
    """How much the judge narrows each model's interval, as a range."""
    if w.per_model is None or not len(w.per_model):
        return ""
    ratios = w.per_model["width_ratio"]
    narrowed = ratios[ratios < 0.99]
    if not len(narrowed):
        return f"; it narrows none of {len(ratios)} models' intervals"
    by = (f"{100 * (1 - narrowed.max()):.0f}-{100 * (1 - narrowed.min()):.0f}%" if len(narrowed) > 1
          else f"{100 * (1 - narrowed.min()):.0f}%")
    widened = int((ratios > 1.01).sum())
    return (f"; it narrows {len(narrowed)} of {len(ratios)} models' intervals, by {by}"
            + (f", and widens {widened}" if widened else ""))


def advice(w: JudgeWorth | None) -> str:
    """The short form of :func:`_action` for the opening table."""
    if w is None:
        return "collect people's votes on its pairs"
    if w.no_interval or w.ratio_ci is None:
        return "collect more human votes"
    if w.ratio_ci[0] > 1.0:
        return "use with a random sample of people's votes"
    if w.ratio_ci[1] < LITTLE:
        return "adds little: spend on human votes"
    return "worth uncertain: use beside people's votes, plan as if it saved none"


def _action(name: str, w: JudgeWorth | None, bias: Finding | None) -> str:
    """What to do, read from the worth's estimate and interval: its lower end alone is no verdict."""
    if w is None:
        return (f"People voted, but not on {name}'s pairs: have people vote on a random sample of the pairs "
                "the judge saw, then rerun to learn what it is worth.")
    bias_note = f" and its {bias.kind} bias" if bias else ""
    how = "" if name == PANEL else f" (python -m analysis.ratings --judge human --ppi {name})"
    if w.no_interval or w.ratio_ci is None:  # neither "use it" nor "adds little" is known
        return f"Collect more human votes before deciding on {name}: {w.no_interval or 'its worth has no interval'}."
    lo, hi = w.ratio_ci
    if lo > 1.0:
        return (f"Use {name} with a random sample of people's votes, never alone: rated together{how}, for the same "
                f"intervals you need {_savings(w)}, and the people's sample corrects its errors{bias_note}.")
    if hi < LITTLE:
        return (f"{name} adds little to people's votes here: each vote counts {w.ratio:.2f}x [{lo:.2f}, {hi:.2f}] "
                f"with it, at most {hi:.2f}x: spend the budget on more human votes rather than on this judge, and do "
                "not use its ratings alone.")
    between = f"between {lo:.2f}x and {hi:.2f}x" if np.isfinite(hi) else f"at least {lo:.2f}x, with no upper end,"
    return (f"{name}'s worth is uncertain: each human vote counts {between} with it (estimate "
            f"{w.ratio:.2f}x){_narrows(w)}. Rated together with a random sample of people's votes{how} the intervals "
            "stay valid whatever the judge gets wrong, so it may be used beside them; plan the human votes as if it "
            "saved none, rerun as they come in, and do not use its ratings alone.")


def _do_not_use(name: str) -> str:
    return (f"Do not use {name}'s verdicts as given: read its order-averaged verdicts (OUT.pairs.jsonl) at most, and "
            "for verdicts that follow the answers use a judge that can read them (an open judge on a GPU, or one "
            "behind an OpenAI-compatible server).")


def _no_people_lines(r: RaterReport) -> tuple[str, ...]:
    lines = ["No human votes in the data: how often this judge agrees with people and how many human votes it is "
             "worth cannot be measured."]
    p, ln = r.position, r.length
    if not p.display_order:
        lines.append(f"Position: none to measure: {no_order_note(r)}.")
    elif p.consistency is not None:
        ci = f" {_pct_ci(p.consistency_ci)}" if p.consistency_ci else ""
        lines.append(f"Position consistency: the same verdict in both orders on {_pct(p.consistency)}{ci} of "
                     f"{p.n_swapped_pairs} pairs shown both ways.")
    else:
        lines.append("Position consistency: no pair was judged in both orders (run judges.run without --no-swap).")
    if ln.longer_rate is not None:
        lines.append(f"Length preference: the longer response wins {_pct(ln.longer_rate)}"
                     f"{' ' + _pct_ci(ln.longer_rate_ci) if ln.longer_rate_ci else ''} of its decisive verdicts "
                     f"(50% without length preference).")
    return tuple(lines)


def summary_blocks(report: BiasReport) -> tuple[SummaryBlock, ...]:
    """One block per LLM judge (the panel included), in the report's order."""
    raters = {r.rater: r for r in report.raters}
    people = raters.get(HUMAN_RATER)
    worth = {w.judge: w for w in report.worth}
    blocks = []
    for r in report.raters:
        if r.is_human:
            continue
        bias = strongest_bias(r, people)
        members = [raters[m] for m in r.panel_members if m in raters]
        follows = _follows_line(r, members)
        # Against people where they voted: a lean the judge shares with them is not counted as its bias.
        against = ("Strongest bias against people, in points from an even choice (length against people's)"
                   if people is not None else "Strongest bias, in points from an even choice")
        if bias:
            bias_line = f"{against}: it {bias.text}."
        elif follows:
            bias_line = f"{against}: position ({FOLLOWS_POSITION})."
        else:
            bias_line = f"{against}: none detected ({_measured(r, people)})." + _length_lean(r, people)
        if people is None or r.reference != HUMAN_RATER:
            lines = (*_no_people_lines(r), bias_line) if people is None else (
                "People voted, but on none of this judge's pairs: its agreement with people cannot be measured.",
                bias_line)
            lines = (follows, *lines) if follows else lines
            action = ("Collect people's votes on a random sample of a few hundred of these pairs and rerun: the "
                      "report will then say how often the judge agrees with people and how many votes it is worth."
                      if people is None else _action(r.rater, None, bias))
            action = _do_not_use(r.rater) if follows else action
            short = "do not use" if follows else advice(None)
            blocks.append(SummaryBlock(r.rater, people is not None, lines, action, None, None, bias, short))
            continue
        agree_line, agree = _agreement(r, people)
        w = worth.get(r.rater)
        lines = (agree_line, _worth_line(w) if w else "Worth: not measured (see the notes of the PPI section).",
                 bias_line)
        lines = (follows, *lines) if follows else lines
        blocks.append(SummaryBlock(
            r.rater, True, lines, _do_not_use(r.rater) if follows else _action(r.rater, w, bias), agree,
            None if w is None else {"effective_human_votes": w.effective_votes, "ci": w.effective_ci,
                                    "n_human": w.n_human, "ratio": w.ratio, "ratio_ci": w.ratio_ci},
            bias, "do not use" if follows else advice(w),
        ))
    return tuple(blocks)


def summary_json(blocks: tuple[SummaryBlock, ...]) -> list[dict]:
    from analysis.report.formatting import num

    def plain(d):
        return None if d is None else {k: num(v) for k, v in d.items()}

    return [{
        "judge": b.judge, "has_people": b.has_people, "lines": list(b.lines), "action": b.action, "advice": b.advice,
        "agreement": plain(b.agreement), "worth": plain(b.worth),
        "strongest_bias": None if b.bias is None else {"kind": b.bias.kind, "size": num(b.bias.size),
                                                       "ci": num(b.bias.ci), "text": b.bias.text},
    } for b in blocks]
