"""The arena on a phone-sized screen and on first opening each tab (Chromium, real app).

The app serves the shipped prompt set's pairs to logged-in voters (a trusted proxy names
them) and counts their votes, so the leaderboard has real ratings with real model names
without loading any model.
"""

import shutil

from app_process import ROOT, AppProcess
import httpx
from playwright.sync_api import sync_playwright
import pytest

from test_browser_arena import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.slow
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    assert CHROMIUM.exists(), "Chromium is missing: run `make browser`"
    tmp = tmp_path_factory.mktemp("small-screen")
    pairs = shutil.copy(ROOT / "data" / "prompts_pairs.jsonl", tmp / "pairs.jsonl")  # a panel's own pairs
    config = tmp / "arena.toml"
    config.write_text(f'[arena]\nmodels = []\npairs = "{pairs}"\nprompt_set_rated = true\nvoter_header = "X-User"\n'
                      '[arena.rate_limit]\ntrusted_proxies = ["127.0.0.1"]\n')
    with AppProcess(config, f"sqlite:///{tmp / 'votes.db'}", tmp / "app.log") as server:
        for i in range(12):  # logged-in voters' counted votes: the leaderboard has ratings
            with httpx.Client(base_url=server.url, headers={"X-User": f"u{i}"}, timeout=30) as client:
                battle = client.post("/arena-api/battles").json()
                assert client.post("/arena-api/votes", json={"battle_id": battle["battle_id"],
                                                             "choice": "a" if i % 3 else "b"}).status_code == 200
        yield server


@pytest.fixture(scope="module")
def browser():
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
