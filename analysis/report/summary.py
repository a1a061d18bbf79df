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
from analysis.report.formatting import no_order_note

__all__ = ["FOLLOWS_POSITION", "Finding", "SummaryBlock", "follows_position", "strongest_bias", "summary_blocks",
           "summary_json"]

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


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _pct_ci(ci) -> str:
    return f"[{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]"


def strongest_bias(r: RaterReport, people: RaterReport | None = None) -> Finding | None:
    """The largest bias whose 95% interval excludes no bias: position (first-shown wins vs
    50%), length (longer wins vs people's rate where people voted, else vs 50%) or
    self-family (agreement gap vs 0)."""
    found = []
    p = r.position
    if _has_position(r) and not p.first_rate_ci[0] <= 0.5 <= p.first_rate_ci[1]:
        side = "first" if p.first_rate > 0.5 else "second"
        found.append(Finding("position", f"picks the {side}-shown response in {_pct(p.first_rate)} "
                             f"{_pct_ci(p.first_rate_ci)} of its decisive verdicts (50% without position bias)",
                             p.first_rate - 0.5, (p.first_rate_ci[0] - 0.5, p.first_rate_ci[1] - 0.5)))
    ln = r.length
    base = people.length if people is not None else None
    if base is not None and base.longer_rate is not None and ln.longer_rate is not None and ln.longer_rate_ci \
            and base.longer_rate_ci:
        # People prefer longer answers too: a judge's length bias is its gap from them. The gap's
        # interval adds the two intervals' half-widths in quadrature (as if independent).
        gap = ln.longer_rate - base.longer_rate
        half = np.hypot(*(np.diff(ci)[0] / 2 for ci in (ln.longer_rate_ci, base.longer_rate_ci)))
        if abs(gap) > half:
            found.append(Finding("length", f"picks the longer response in {_pct(ln.longer_rate)} "
                                 f"{_pct_ci(ln.longer_rate_ci)} of its decisive verdicts, people in "
                                 f"{_pct(base.longer_rate)}: {'more' if gap > 0 else 'less'} length preference than "
                                 f"people by {abs(100 * gap):.0f} points [{100 * (gap - half):+.0f}, "
                                 f"{100 * (gap + half):+.0f}]", gap, (gap - half, gap + half)))
    elif ln.longer_rate is not None and ln.longer_rate_ci and not ln.longer_rate_ci[0] <= 0.5 <= ln.longer_rate_ci[1]:
        side = "longer" if ln.longer_rate > 0.5 else "shorter"
        found.append(Finding("length", f"picks the {side} response in {_pct(max(ln.longer_rate, 1 - ln.longer_rate))} "
                             f"of its decisive verdicts, {_pct_ci(ln.longer_rate_ci)} for the longer (50% without "
                             "length preference)",
                             ln.longer_rate - 0.5, (ln.longer_rate_ci[0] - 0.5, ln.longer_rate_ci[1] - 0.5)))
    # Self-family only from the controlled term (strength, sharpness, position and length held
    # fixed): the raw agreement gap mistakes a strong family, or a sharp judge, for a biased one.
    c = r.controlled
    if c is not None and c.coef is not None and c.ci and c.flagged:  # Holm-adjusted over the judges
        # Its size as a share: the change it makes to an even (50%) choice.
        def share(x: float) -> float:
            return 1 / (1 + np.exp(-x)) - 0.5

        found.append(Finding("self-family", f"favours its own family's ({r.family}) responses by {c.coef:+.2f} "
                             f"log-odds [{c.ci[0]:+.2f}, {c.ci[1]:+.2f}] with model strength, its sharpness, position "
                             f"and length lean held fixed"
                             + (", beyond the other judges' lean for that family" if c.shared is not None else "")
                             + f" (about {abs(100 * share(c.coef)):.0f} points on an even "
                             "choice)", share(c.coef), (share(c.ci[0]), share(c.ci[1]))))
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
    has = {"position": _has_position(r),
           "length": ln.longer_rate is not None and bool(ln.longer_rate_ci)
           and (base is None or (base.longer_rate is not None and bool(base.longer_rate_ci))),
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


def _agreement(r: RaterReport, people: RaterReport | None) -> tuple[str, dict]:
    a = r.agreement
    base = people.agreement if people else None

    def one(value, ci) -> str:
        return "-" if value is None else f"{_pct(value)} {_pct_ci(ci)}" if ci else _pct(value)

    text = (f"Agrees with people on {one(a.without_ties, a.without_ties_ci)} of decisive vote pairs "
            f"({one(a.with_ties, a.with_ties_ci)} with ties counted)")
    same = r.agreement_same_pairs
    if base is not None and base.without_ties is not None and same is not None and same.without_ties is not None:
        # People's agreement with each other exists only where two or more people voted: the
        # judge is compared with it on those same pairs, not on all of its own.
        # People's agreement rests on all their pairs, which may be more than the judge's (parse failures).
        theirs = "" if base.n_items == same.n_items else f" on their {base.n_items} pairs"
        text += (f". On the {same.n_items} pairs two or more people voted on, it agrees with them on "
                 f"{one(same.without_ties, same.without_ties_ci)} and people agree with each other on "
                 f"{one(base.without_ties, base.without_ties_ci)}{theirs} (with ties "
                 f"{one(same.with_ties, same.with_ties_ci)} and {one(base.with_ties, base.with_ties_ci)})")
    data = {"without_ties": a.without_ties, "without_ties_ci": a.without_ties_ci, "with_ties": a.with_ties,
            "with_ties_ci": a.with_ties_ci, "people_without_ties": base.without_ties if base else None,
            "people_without_ties_ci": base.without_ties_ci if base else None,
            "people_with_ties": base.with_ties if base else None,
            "people_with_ties_ci": base.with_ties_ci if base else None, "n": a.n,
            "same_pairs_without_ties": same.without_ties if same else None,
            "same_pairs_without_ties_ci": same.without_ties_ci if same else None,
            "same_pairs_n_items": same.n_items if same else None}
    return text + ".", data


def _worth_line(w: JudgeWorth) -> str:
    ci = "" if w.effective_ci is None else f" [{w.effective_ci[0]:.0f}, {w.effective_ci[1]:.0f}]"
    # The design may be a subsample of people's pairs (people voted on most of them): say so, or the
    # numbers read as if people had voted on fewer pairs than the data hold.
    # People's sample is named after the ratings, not after "the judge on all of them", where its
    # count read as the judge's.
    text = (f"Worth: with {w.design}, the ratings are as precise as {w.effective_votes:.0f}{ci} human votes alone, "
            f"from people's {w.n_human:.0f} votes on {w.n_human_pairs} pairs: each vote counts {w.ratio:.2f}x"
            + ("" if w.ratio_ci is None else f" [{w.ratio_ci[0]:.2f}, {w.ratio_ci[1]:.2f}]") + ".")
    if w.no_interval:
        text += f" No interval: {w.no_interval}."
    if w.per_model is not None:
        # The average hides models the judge does not help: say how many it narrows, per model.
        widths = ", ".join(f"{m} {r:.2f}x" for m, r in zip(w.per_model["model"], w.per_model["width_ratio"]))
        text += (f" Its weight is tuned per model: it narrows {w.n_narrowed} of {len(w.per_model)} models' "
                 f"intervals (width with the judge over people's alone: {widths}).")
    return text


def _action(name: str, w: JudgeWorth | None, bias: Finding | None) -> str:
    if w is None:
        return (f"People voted, but not on {name}'s pairs: have people vote on a random sample of the pairs "
                "the judge saw, then rerun to learn what it is worth.")
    bias_note = f" and its {bias.kind} bias" if bias else ""
    if w.no_interval:  # neither "use it" nor "adds little" is known
        return f"Collect more human votes before deciding on {name}: {w.no_interval}."
    if w.ratio_ci is not None and w.ratio_ci[0] > 1.0:
        saved = 1 - 1 / w.ratio
        how = "" if name == PANEL else f" (python -m analysis.ratings --judge human --ppi {name})"
        return (f"Use {name} with a random sample of people's votes, never alone: rated together"
                f"{how} you need about {_pct(saved)} fewer votes "
                f"for the same intervals, and the people's sample corrects its errors{bias_note}.")
    return (f"{name} adds little to people's votes here (each vote counts {w.ratio:.2f}x with it): spend the "
            f"budget on more human votes rather than on this judge, and do not use its ratings alone.")


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
        against = ("Strongest bias against people (position vs 50%, length vs people's rate, self-family as the "
                   "controlled term vs 0)" if people is not None else "Strongest bias")
        if bias:
            bias_line = f"{against}: it {bias.text}."
        elif follows:
            bias_line = f"{against}: position ({FOLLOWS_POSITION})."
        else:
            bias_line = f"{against}: none detected ({_measured(r, people)})." + _length_lean(r, people)
        if people is None or r.reference != HUMAN_RATER:
            if people is None and bias is not None and bias.kind == "length":
                bias_line = "Strongest bias: its length preference (above)."
            lines = (*_no_people_lines(r), bias_line) if people is None else (
                "People voted, but on none of this judge's pairs: its agreement with people cannot be measured.",
                bias_line)
            lines = (follows, *lines) if follows else lines
            action = ("Collect people's votes on a random sample of a few hundred of these pairs and rerun: the "
                      "report will then say how often the judge agrees with people and how many votes it is worth."
                      if people is None else _action(r.rater, None, bias))
            action = _do_not_use(r.rater) if follows else action
            blocks.append(SummaryBlock(r.rater, people is not None, lines, action, None, None, bias))
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
            bias,
        ))
    return tuple(blocks)


def summary_json(blocks: tuple[SummaryBlock, ...]) -> list[dict]:
    from analysis.report.formatting import num

    def plain(d):
        return None if d is None else {k: num(v) for k, v in d.items()}

    return [{
        "judge": b.judge, "has_people": b.has_people, "lines": list(b.lines), "action": b.action,
        "agreement": plain(b.agreement), "worth": plain(b.worth),
        "strongest_bias": None if b.bias is None else {"kind": b.bias.kind, "size": num(b.bias.size),
                                                       "ci": num(b.bias.ci), "text": b.bias.text},
    } for b in blocks]
