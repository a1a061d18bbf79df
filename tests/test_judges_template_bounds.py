"""Every render of a judge template is bounded in time and size, not only the trial render at load.

The trial render uses short sample texts, so a template whose work grows with the judged
texts loads at once and only misbehaves on a long response: a nested loop over the
response's characters ran for minutes, and ``~`` doubling built a 172 MB prompt. Renders
run in the judge's threads, so the bound must hold in any thread.
"""

from __future__ import annotations

import threading

import pytest

from judges.templates import RENDER_TIMEOUT_S, TemplateError, get_template

HEADER = "{#\nverdict: \\[\\[(?P<verdict>[AB])\\]\\]\n#}\n"
PLACES = "{{ instruction }} {{ response_a }} {{ response_b }}\n"


def _load(tmp_path, name: str, body: str):
    path = tmp_path / name
    path.write_text(HEADER + PLACES + body)
    return get_template(str(path))  # short sample texts: the load sees nothing wrong


def _render_in_threads(template, response: str, n: int = 2) -> list:
    """Render in ``n`` threads at once; each outcome is the error raised (or the prompt)."""
    outcomes: list = [None] * n

    def render(i: int) -> None:
        try:
            outcomes[i] = template.messages("Which is better?", response, "Short answer.")
        except Exception as exc:
            outcomes[i] = exc

    workers = [threading.Thread(target=render, args=(i,), daemon=True) for i in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(RENDER_TIMEOUT_S + 10)
    assert not any(w.is_alive() for w in workers), "a render is still running past its bound"
    return outcomes


def test_a_loop_that_only_runs_long_on_long_responses_is_stopped_on_every_render(tmp_path):
    quadratic = "{% for c in response_a %}{% for d in response_a %}{% endfor %}{% endfor %}"
    template = _load(tmp_path, "quadratic.jinja", quadratic)
    for outcome in _render_in_threads(template, "x" * 30_000):  # 900 million iterations each
        assert isinstance(outcome, TemplateError), outcome
        assert "quadratic.jinja" in str(outcome) and f"longer than {RENDER_TIMEOUT_S:g} s" in str(outcome)
    assert template.messages("q?", "short", "short")  # short texts still render


@pytest.mark.parametrize("body", [
    # ~ doubling: 18 sample characters x 2**14 load fine; a 10,000-character response made 164 MB.
    "{% set ns = namespace(s=response_a) %}{% for i in range(14) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
    "{{ ns.s | length }}",
    # Output that grows with the response: each copy is small, all of them are not.
    "{% for i in range(response_a | length) %}{{ response_a }}{% endfor %}",
    # A list grown with references to the response, then joined.
    "{% set xs = [] %}{% for c in response_a %}{% if xs.append(response_a) %}{% endif %}{% endfor %}"
    "{{ xs | join | length }}",
    # A width taken from the response's length.
    "{{ response_a | center((response_a | length) ** 2) | length }}",
])
def test_strings_that_grow_with_the_response_are_refused(tmp_path, body):
    template = _load(tmp_path, "grows.jinja", body)
    (outcome,) = _render_in_threads(template, "y" * 10_000, n=1)
    assert isinstance(outcome, TemplateError), outcome if isinstance(outcome, Exception) else "rendered"
    assert "grows.jinja" in str(outcome) and "characters" in str(outcome)


@pytest.mark.parametrize("step", [
    "{% set s = s ~ s %}",  # the review's template: twenty doublings reached 963 MB before any judging
    "{% set s %}{{ s }}{{ s }}{% endset %}",
    "{% macro twice(x) %}{{ x }}{{ x }}{% endmacro %}{% set s = twice(s) %}",
    "{% set s = '%s%s' % (s, s) %}",
    "{% set s = (s, s) | join %}",
])
def test_a_string_doubled_twenty_times_is_refused_at_load_in_bounded_memory(tmp_path, step):
    import tracemalloc

    path = tmp_path / "doubling.jinja"
    path.write_text(HEADER + PLACES + "{% set s = response_a ~ instruction %}" + step * 20 + "{{ s | length }}")
    tracemalloc.start()
    try:
        with pytest.raises(TemplateError) as refused:
            get_template(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "doubling.jinja" in str(refused.value) and "characters" in str(refused.value)
    # The bound is 4M characters built or output; everything the render holds stays a few times that.
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB traced while loading"
