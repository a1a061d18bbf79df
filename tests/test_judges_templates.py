"""Judge templates: the registry, placeholders, user template files and their declarations."""


import pytest

from judges.templates import BUILTIN, JudgeTemplate, TemplateError, _trial_render, get_template
from judges.verdicts import parse_verdict

USER_TEMPLATE = """{#
verdict: Verdict:\\s*(?P<verdict>A|B|same)
tie: same
logprob_prefix: "Verdict: "
system: You compare two answers.
#}
Q: {{ instruction }}
{% if reference %}Reference: {{ reference }}
{% endif %}
1) {{ response_a }}
2) {{ response_b }}
"""


def write(tmp_path, text, name="mine.jinja"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_registry_holds_the_three_families():
    assert set(BUILTIN) == {"prometheus-relative", "prometheus-absolute", "mt-bench-pair", "arena-hard-pair"}
    assert get_template("mt-bench-pair") is BUILTIN["mt-bench-pair"]


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_prompts_show_both_responses_in_order(name):
    template = BUILTIN[name]
    chats = template.messages("What is 2+2?", "FIRST-RESPONSE", "SECOND-RESPONSE", reference="REF-ANSWER")
    text = "\n".join(m["content"] for chat in chats for m in chat)
    assert "What is 2+2?" in text and "REF-ANSWER" in text
    assert text.index("FIRST-RESPONSE") < text.index("SECOND-RESPONSE")
    assert all(chat[-1]["role"] == "user" for chat in chats)
    # Absolute grading sees one response per prompt.
    assert len(chats) == (2 if template.kind == "absolute" else 1)


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_reference_section_only_when_there_is_a_reference(name):
    with_ref = BUILTIN[name].messages("q", "a", "b", reference="the reference")[0][-1]["content"]
    without = BUILTIN[name].messages("q", "a", "b", reference=None)[0][-1]["content"]
    assert "the reference" in with_ref
    assert "Reference" not in without and "reference answer" not in without.lower()


def test_hash_changes_with_anything_that_shapes_prompt_or_verdict(tmp_path):
    base = get_template(write(tmp_path, USER_TEMPLATE))
    assert base.sha256 == get_template(write(tmp_path, USER_TEMPLATE, "copy.jinja")).sha256
    for old, new in [("Q:", "Question:"), ("tie: same", "tie: equal"), ("You compare", "You judge")]:
        changed = get_template(write(tmp_path, USER_TEMPLATE.replace(old, new).replace("|same", "|equal")
                                     if "tie" in old else USER_TEMPLATE.replace(old, new), "x.jinja"))
        assert changed.sha256 != base.sha256, old


def test_user_template_file_declares_its_verdict(tmp_path):
    template = get_template(write(tmp_path, USER_TEMPLATE))
    assert template.name == "mine.jinja" and template.tie == "same"
    assert template.labels == ("A", "B", "same")
    assert template.scoring_split() == ("Verdict:", [" A", " B", " same"])
    chat = template.messages("why?", "one", "two")[0]
    assert chat[0] == {"role": "system", "content": "You compare two answers."}
    assert chat[1]["content"] == "Q: why?\n1) one\n2) two"
    assert parse_verdict(template, "Verdict: A ... on reflection Verdict: same") == "same"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Q: {{ instruction }} {{ response_a }} {{ response_b }}", "must start with"),
        ("{# tie: C #}\n{{ instruction }} {{ response_a }} {{ response_b }}", "verdict: REGEX"),
        ("{# verdict: \\[\\[(A|B)\\]\\] #}\n{{ instruction }} {{ response_a }} {{ response_b }}", "named group"),
        ("{# verdict: (?P<verdict>[AB #}\n{{ instruction }} {{ response_a }} {{ response_b }}", "does not compile"),
        ("{# verdict: (?P<verdict>[AB]) #}\n{{ instruction }} {{ response_a }}", "must use response_b"),
        ("{# verdict: (?P<verdict>[AB]) #}\n{{ instruction }} {{ response_a }} {{ response_b }} {{ answer }}",
         "unknown placeholder(s) answer"),
        ("{# verdict: (?P<verdict>[AB]) #}\n{{ instruction }} {% if %}", "line 2"),
        ("{# verdict: (?P<verdict>[AB])\ncolour: red #}\n{{ instruction }} {{ response_a }} {{ response_b }}",
         "header line 2"),
        ("{# verdict: (?P<verdict>[1-5])\nkind: absolute\ntie: 3 #}\n{{ instruction }} {{ response }}",
         "no tie label"),
    ],
)
def test_bad_user_templates_say_what_is_wrong(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(TemplateError) as info:
        get_template(path)
    assert message in str(info.value) and path in str(info.value)


def test_unknown_template_name_lists_the_choices():
    with pytest.raises(TemplateError, match="prometheus-relative, prometheus-absolute, mt-bench-pair"):
        get_template("prometheus-2")


def test_logprob_mode_needs_a_declared_prefix(tmp_path):
    template = get_template(write(tmp_path, "{# verdict: (?P<verdict>[AB]) #}\n"
                                            "{{ instruction }} {{ response_a }} {{ response_b }}"))
    with pytest.raises(TemplateError, match="logprob_prefix"):
        template.scoring_split()


def test_template_placeholders_are_not_code(tmp_path):
    # The sandbox refuses attribute tricks a hostile template could use.
    path = write(tmp_path, "{# verdict: (?P<verdict>[AB]) #}\n{{ instruction.__class__.__mro__ }}"
                           "{{ response_a }} {{ response_b }}")
    with pytest.raises(Exception, match="unsafe|not safely"):
        get_template(path).messages("q", "a", "b")


@pytest.mark.parametrize("expression", ["{{ (9**999999999) > 1 }}", "{{ ('x' * 10**9) | length }}",
                                        "{{ 7 * 10**2000 }}"])
def test_a_template_cannot_hang_or_exhaust_its_load(tmp_path, expression):
    path = tmp_path / "bomb.jinja"
    path.write_text("{#\nverdict: \\[\\[(?P<verdict>[AB])\\]\\]\n#}\n"
                    "{{ instruction }} {{ response_a }} {{ response_b }} " + expression + "\n")
    # Unbounded, these take hours or all the memory: the error itself is the proof of the bound.
    with pytest.raises(TemplateError, match="bomb.jinja.*too large"):
        get_template(str(path))


def test_a_template_that_renders_too_long_or_is_too_big_is_refused(tmp_path):
    # About a second of looping: over a 0.2 s bound.
    body = ("{{ instruction }} {{ response_a }} {{ response_b }}"
            "{% for i in range(100000) %}{% for j in range(20) %}{% endfor %}{% endfor %}")
    slow = JudgeTemplate("slow", "pairwise", body, r"\[\[(?P<verdict>[AB])\]\]")
    with pytest.raises(TemplateError, match="longer than 0.2 s"):
        _trial_render(slow, timeout_s=0.2)
    big = tmp_path / "big.jinja"
    big.write_text("{#\nverdict: \\[\\[(?P<verdict>[AB])\\]\\]\n#}\n{{ instruction }} {{ response_a }} "
                   "{{ response_b }}" + "x" * 70_000)
    with pytest.raises(TemplateError, match="at most"):
        get_template(str(big))
    assert BUILTIN["mt-bench-pair"].messages("2 * 3?", "6", "5")  # ordinary templates still render
