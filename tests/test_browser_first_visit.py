"""A first visit as a new user makes it (`make demo`'s config, a fresh store, Chromium).

Every navigation link on every page opens in the same tab a page that loads, with or
without a trailing slash; one vote on a fresh store, then the leaderboard shows the
counts and no "Error" anywhere.
"""

import sqlite3

from app_process import AppProcess
import httpx
import pytest

from arena.config import DEFAULT_CONFIG
from test_browser_arena import CHROMIUM, browser_page  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.process]
PAGES = ["/", "/side-by-side", "/leaderboard"]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    assert CHROMIUM.exists(), "Chromium is missing: run `make browser`"
    where = tmp_path_factory.mktemp("first-visit")
    db = where / "votes.db"
    with AppProcess(DEFAULT_CONFIG, f"sqlite:///{db}", where / "app.log") as server:
        yield server, db


def test_every_path_loads_with_or_without_a_trailing_slash(app):
    server, _ = app
    for path in PAGES:
        for variant in {path, path.rstrip("/") + "/"}:
            response = httpx.get(server.url + variant, follow_redirects=True, timeout=30)
            assert response.status_code == 200 and "Not Found" not in response.text, variant
            assert "<gradio-app" in response.text or "gradio" in response.text.lower()


def test_every_nav_link_opens_a_page_that_loads_in_the_same_tab(app, browser_page):
    server, _ = app
    page = browser_page
    for start in PAGES:
        page.goto(server.url + start)
        page.wait_for_selector("#nav a")
        hrefs = page.eval_on_selector_all("#nav a", "links => links.map(a => a.getAttribute('href'))")
        assert len(hrefs) == 2, (start, hrefs)
        for href in hrefs:
            page.goto(server.url + start)
            link = page.locator(f'#nav a[href="{href}"]')
            link.wait_for()
            assert len(page.context.pages) == 1
            link.click()
            page.wait_for_url(server.url + href)
            page.wait_for_selector("#nav")
            assert len(page.context.pages) == 1, f"{href} from {start} opened a new tab"
            assert "Not Found" not in page.inner_text("body")


def test_first_vote_then_the_leaderboard_shows_counts_and_no_error(app, browser_page):
    server, db = app
    page = browser_page
    page.goto(server.url + "/")
    page.wait_for_selector("#prompt textarea")
    page.fill("#prompt textarea", "Name three primary colors.")
    page.click("#send")
    page.wait_for_function("() => !document.querySelector('#vote-a').disabled", timeout=240_000)
    page.click("#vote-a")
    page.wait_for_function("() => document.querySelector('#name-a')?.innerText.includes('Model A:')",
                           timeout=60_000)
    name_a = page.inner_text("#name-a").split(":", 1)[1].strip()
    name_b = page.inner_text("#name-b").split(":", 1)[1].strip()
    assert sqlite3.connect(db).execute("SELECT count(*) FROM votes").fetchone() == (1,)

    page.get_by_role("link", name="Leaderboard").click()
    page.wait_for_function(
        "() => document.querySelector('#leaderboard-summary')?.innerText.includes('1 rated vote.')", timeout=120_000)
    page.wait_for_selector("#model-counts table")
    page.wait_for_timeout(1000)  # a failed event would raise its toast just after
    text = page.inner_text("body")
    assert "Error" not in text and "did not converge" not in text
    assert "Early estimate, needs more votes" in text and "How these numbers are computed" in text
    counts = page.inner_text("#model-counts")
    assert name_a in counts and name_b in counts
    assert page.inner_text("#battle-counts").count("1") >= 2
    # The win-fraction heatmap names its rows (a styled table once lost them).
    win_rates = page.inner_text("#win-rates")
    assert win_rates.count(name_a) == 2 and win_rates.count(name_b) == 2, win_rates
