"""Category views of the leaderboard read from the stored records alone."""

import pytest

from arena.categories import in_category, language, views
from pairlab.records import Record


def record(prompt, turns=1, response_a="ok", response_b="fine"):
    users = [{"role": "user", "content": p} for p in ([prompt] * turns)]
    return Record(pair_id="p", prompt=prompt, model_a="x", model_b="y", response_a=response_a,
                  response_b=response_b, winner="tie", judge="human", turn=turns,
                  conversation={"model_a": users, "model_b": users})


def test_each_category_picks_its_votes():
    plain = record("Name three primary colors.")
    code = record("Write a Python function that reverses a list.")
    fenced = record("Show me.", response_a="```\nprint(1)\n```")
    long = record("word " * 120)
    multi = record("And then?", turns=2)
    german = record("Wie spät ist es heute in Berlin und wie wird das Wetter morgen?")
    assert [in_category(r, "code") for r in (plain, code, fenced)] == [False, True, True]
    assert in_category(long, "long-prompt") and not in_category(plain, "long-prompt")
    assert in_category(multi, "multi-turn") and not in_category(plain, "multi-turn")
    assert language(german.prompt) == "de" and in_category(german, "lang:de")
    assert not in_category(plain, "lang:de")
    found = views([plain, code, german])
    assert {"all", "code"} <= set(found) and "multi-turn" not in found
    assert not any(k.startswith("lang:") for k in found)  # one vote per language is no view yet
    found = views([plain, code, german] * 10)
    assert found["lang:de"] == "language: German" and found["lang:en"] == "language: English"
    with pytest.raises(ValueError, match="unknown category"):
        in_category(plain, "poetry")


def test_short_or_unsure_prompts_get_no_language():
    # langdetect says Romanian (5 of 7 trials) for this English prompt; too short to tell.
    assert language("Name a fruit.") == "unknown"
    assert not in_category(record("Name a fruit."), "lang:ro")
    assert language("Bonjour, comment ça va ?") == "unknown"  # 6 of 7 trials: not sure enough
    assert language("Write a Python function that reverses a list.") == "en"
    assert views([record("Name a fruit.")] * 20) == {"all": "all votes"}
