"""Seeded synthetic comparisons for the report at scale: the records bench/report.py times,
and the sample tests/test_report_golden.py compares report.json on.

Pairs among 8 models of 4 families; one human vote per pair and two LLM judges judging
every pair in both orders. ``judge-llama`` (a family with models in the pool) leans to the
first-shown and the longer response; ``judge-qwen`` follows strength alone. With
``rich``, every fifth pair gets a second human vote (the human-human baseline) and
``judge-qwen`` states ``prob_a`` (the calibrated variant).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pairlab.records import make_pair_id

MODELS = {"llama-a": ("llama", 0.4), "llama-b": ("llama", 0.1), "bloom-a": ("bloom", 0.0), "bloom-b": ("bloom", -0.2),
          "opt-a": ("opt", -0.3), "opt-b": ("opt", 0.2), "pythia-a": ("pythia", 0.0), "pythia-b": ("pythia", -0.1)}


def synthetic_records(n_pairs: int, seed: int = 0, rich: bool = False) -> list[dict]:
    return list(iter_synthetic_records(n_pairs, seed, rich))


def iter_synthetic_records(n_pairs: int, seed: int = 0, rich: bool = False, pairs_per_prompt: int = 1
                           ) -> Iterator[dict]:
    """:func:`synthetic_records` one at a time (a million records need not be held at once).
    ``pairs_per_prompt`` consecutive pairs share a prompt (then the report clusters by prompt)."""
    rng = np.random.default_rng(seed)
    names = list(MODELS)
    strength = np.array([MODELS[m][1] for m in names])
    a = rng.integers(0, len(names), n_pairs)
    b = (a + rng.integers(1, len(names), n_pairs)) % len(names)
    len_a, len_b = rng.integers(20, 800, n_pairs), rng.integers(20, 800, n_pairs)
    for i in range(n_pairs):
        ma, mb = names[a[i]], names[b[i]]
        ra, rb = f"{i} {ma} " + "wd " * int(len_a[i] // 3), f"{i} {mb} " + "wd " * int(len_b[i] // 3)
        prompt = f"prompt {i // pairs_per_prompt}"
        pid = make_pair_id(prompt, ra, rb)
        d = strength[a[i]] - strength[b[i]]
        base = {"pair_id": pid, "prompt": prompt, "family_a": MODELS[ma][0], "family_b": MODELS[mb][0]}
        shown = {"model_a": ma, "model_b": mb, "response_a": ra, "response_b": rb}
        swapped = {"model_a": mb, "model_b": ma, "response_a": rb, "response_b": ra}
        p_human = 1 / (1 + np.exp(-d))
        u = rng.random(7)
        yield {**base, **shown, "winner": "tie" if u[0] < 0.1 else ("model_a" if u[1] < p_human else "model_b"),
               "judge": f"human:{i % 50}"}
        if rich and i % 5 == 0:
            yield {**base, **shown, "winner": "model_a" if u[6] < p_human else "model_b",
                   "judge": f"human:{(i + 1) % 50}"}
        for order, sign in ((shown, 1.0), (swapped, -1.0)):
            length = 0.002 * sign * (len_a[i] - len_b[i])
            p = 1 / (1 + np.exp(-(sign * d + length + 0.3)))  # +0.3: a first-position lean
            k = 2 if sign > 0 else 4
            yield {**base, **order, "winner": "model_a" if u[k] < p else "model_b", "judge": "judge-llama",
                   "judge_family": "llama"}
            p_qwen = 1 / (1 + np.exp(-sign * d))
            qwen = {**base, **order, "winner": "model_a" if u[k + 1] < p_qwen else "model_b", "judge": "judge-qwen",
                    "judge_family": "qwen"}
            if rich:
                qwen["prob_a"] = round(float(p_qwen), 4)
            yield qwen
