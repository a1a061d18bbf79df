"""The arena on a phone-sized screen and on first opening each tab (Chromium, real app).

The app serves the shipped prompt set's pairs to logged-in voters (a trusted proxy names
them) and counts their votes, so the leaderboard has real ratings with real model names
without loading any model. It runs a labelling campaign (the planner's picks and a judge's
verdicts on the pairs), so the leaderboard also sets people + judge ratings beside people's alone.
"""

from contextlib import closing
import shutil
import sqlite3

from app_process import ROOT, AppProcess
import httpx
import pytest

from test_arena_campaign import JUDGE, write_campaign
from test_browser_arena import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.process]
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    assert CHROMIUM.exists(), "Chromium is missing: run `make browser`"
    tmp = tmp_path_factory.mktemp("small-screen")
    pairs = shutil.copy(ROOT / "data" / "prompts_pairs.jsonl", tmp / "pairs.jsonl")  # a panel's own pairs
    config = tmp / "arena.toml"
    picks, verdicts, _ = write_campaign(tmp)
    config.write_text(f'[arena]\nmodels = []\npairs = "{pairs}"\nprompt_set_rated = true\nvoter_header = "X-User"\n'
                      f'picks = "{picks}"\nverdicts = "{verdicts}"\n'
                      '[arena.rate_limit]\ntrusted_proxies = ["127.0.0.1"]\n')
    with AppProcess(config, f"sqlite:///{tmp / 'votes.db'}", tmp / "app.log") as server:
        # Logged-in voters' counted votes on the picks, until they cover 12 pairs (one a prompt),
        # so the leaderboard has ratings with ranges; most prefer the longer answer, as the judge.
        prompts: set[str] = set()
        n = 0
        while len(prompts) < 12 or n < 24:
            with httpx.Client(base_url=server.url, headers={"X-User": f"u{n}"}, timeout=30) as client:
                battle = client.post("/arena-api/battles").json()
                longer = "a" if len(battle["response_a"]) >= len(battle["response_b"]) else "b"
                choice = longer if n % 4 else {"a": "b", "b": "a"}[longer]
                assert client.post("/arena-api/votes", json={"battle_id": battle["battle_id"],
                                                             "choice": choice}).status_code == 200
            prompts.add(battle["prompt"])
            n += 1
        yield server


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def test_the_prompt_set_tab_shows_a_pair_when_opened(app, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(app.url + "/")
    page.get_by_role("tab", name="Prompt set").click()
    # Without pressing "Next pair": the tab opens on a pair to vote on.
    page.wait_for_function("() => document.querySelector('#ps-prompt')?.innerText.includes('Prompt:')",
                           timeout=30_000)
    shown = page.inner_text("#ps-prompt")
    page.get_by_role("tab", name="Battle").click()
    page.get_by_role("tab", name="Prompt set").click()
    page.wait_for_timeout(1000)
    assert page.inner_text("#ps-prompt") == shown  # back on the tab, the same pair: no new one served
    page.close()


def test_the_leaderboard_fits_a_phone_screen_and_explains_only_the_columns_it_shows(app, browser):
    page = browser.new_page(viewport=PHONE)
    page.goto(app.url + "/leaderboard/")
    page.wait_for_function("() => document.querySelector('#ratings')?.innerText.includes('gemma')", timeout=60_000)
    edges = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#ratings th')]
        .map(th => [th.innerText.trim(), th.getBoundingClientRect().right]))""")
    assert "rating" in edges and edges["rating"] <= PHONE["width"], edges  # the rating column is on screen
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # no sideways scrolling page
    label = page.inner_text("#ratings")
    assert ("Style-controlled" in label) == ("style-controlled" in edges), (label[:300], edges)
    # The view list says when the category views appear.
    assert "Views appear" in page.inner_text("body")
    page.close()


def test_the_leaderboard_sets_the_campaigns_people_plus_judge_ratings_beside_peoples_alone(app, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(app.url + "/leaderboard/")
    page.wait_for_function("() => document.querySelector('#campaign-ratings')?.innerText.includes('gemma')",
                           timeout=60_000)
    headers = page.eval_on_selector_all("#campaign-ratings th", "ths => ths.map(th => th.innerText.trim())")
    assert f"people + {JUDGE}" in headers and "people alone" in headers, headers
    # The table's text: its caption, the headers, then each row's cells, one a line (every cell
    # filled: the votes cover 12 pairs, so every range is shown).
    cells = [line for line in page.inner_text("#campaign-ratings").split("\n") if line.strip()]
    cells = cells[cells.index(headers[-1]) + 1:]
    rows = [dict(zip(headers, cells[k:k + len(headers)])) for k in range(0, len(cells), len(headers))]
    assert sorted(r["model"] for r in rows) == ["gemma3-270m", "smollm2-135m-instruct"], rows
    for row in rows:  # both ratings, each with its range
        for rating, lower, upper in ((f"people + {JUDGE}", "lower", "upper"),
                                     ("people alone", "alone lower", "alone upper")):
            assert float(row[lower]) < float(row[rating]) < float(row[upper]), row
    summary = page.inner_text("#campaign-summary")
    with closing(sqlite3.connect(app.db.removeprefix("sqlite:///"))) as db:
        stored = db.execute("SELECT count(*) FROM votes").fetchone()[0]
    assert f"{stored} votes" in summary and "active" in summary and "1/probability" in summary
    assert "Error" not in page.inner_text("body")
    page.close()
