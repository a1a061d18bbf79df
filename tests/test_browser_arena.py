"""The real app on the real embedded models, driven by Debian's Chromium through Playwright.

A voter types a prompt, both answers stream in, and until the vote nothing the browser
received (the page, every HTTP response body, every streamed event) names a model.
After the vote the names show, and exactly that vote is in the SQLite file.
"""

import base64
import json
import re
import sqlite3
from pathlib import Path

from app_process import ROOT, AppProcess
import pytest

from pairlab.models import load_config

pytestmark = [pytest.mark.browser, pytest.mark.model, pytest.mark.process]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOT = ROOT / "reports" / "arena-browser.png"
MODELS = ("smollm2-135m-instruct", "gemma3-270m")
MAX_PROMPT_CHARS = 300


def identity_words() -> tuple[list[str], list[str]]:
    """(ids and families: never anywhere; vendors: never in what the app itself sends)."""
    specs = load_config()
    strict = [w.lower() for m in MODELS for w in (m, specs[m].family)]
    vendors = [specs[m].vendor.lower() for m in MODELS if specs[m].vendor]
    return strict, vendors


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    assert CHROMIUM.exists(), "Chromium is missing: run `make browser`"
    where = tmp_path_factory.mktemp("arena-browser")
    config = where / "arena.toml"
    config.write_text(f"""
[arena]
models = {json.dumps(list(MODELS))}
prompts = "{ROOT / 'data' / 'prompts.jsonl'}"
max_turns = 2
max_prompt_chars = {MAX_PROMPT_CHARS}
[arena.generation]
max_new_tokens = 32
temperature = 0.0
""")
    db = where / "votes.db"
    with AppProcess(config, f"sqlite:///{db}", where / "app.log") as server:
        yield server, db


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        yield page
        browser.close()


class Wiretap:
    """Every response body the page receives: finished ones from Playwright, and streams
    (SSE that stay open, e.g. Gradio's heartbeat) chunk by chunk through the DevTools
    protocol, which Playwright's ``response.body()`` cannot read until they close."""

    def __init__(self, page):
        self.finished: list[tuple[str, bytes]] = []
        self.streamed: dict[str, bytearray] = {}
        self.urls: dict[str, str] = {}
        self.sockets: list[str] = []
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Network.enable")
        self.cdp.on("Network.responseReceived", self._response)
        self.cdp.on("Network.dataReceived", self._data)
        page.on("requestfinished", self._finished)
        page.on("websocket", lambda ws: ws.on("framereceived", lambda frame: self.sockets.append(str(frame))))

    def _response(self, event):
        request_id = event["requestId"]
        self.urls[request_id] = event["response"]["url"]
        self.streamed.setdefault(request_id, bytearray())
        try:
            buffered = self.cdp.send("Network.streamResourceContent", {"requestId": request_id})
        except Exception:  # already complete: the requestfinished body covers it
            return
        self.streamed[request_id] += base64.b64decode(buffered.get("bufferedData", ""))

    def _data(self, event):
        if event.get("data"):
            self.streamed.setdefault(event["requestId"], bytearray()).extend(base64.b64decode(event["data"]))

    def _finished(self, request):
        response = request.response()
        try:
            body = response.body() if response else b""
        except Exception:  # redirects and the like have no body
            body = b""
        self.finished.append((request.url, body))

    def bodies(self) -> list[tuple[str, str]]:
        out = [(url, body.decode("utf-8", "replace")) for url, body in self.finished]
        out += [(self.urls.get(rid, rid), bytes(data).decode("utf-8", "replace")) for rid, data in self.streamed.items()]
        out += [("websocket", frame) for frame in self.sockets]
        return out + [("reassembled stream", text) for text in reassembled(out)]


def reassembled(bodies: list[tuple[str, str]]) -> list[str]:
    """Each streamed value rebuilt from Gradio's diffs: a word the panes reveal in two
    pieces (both grow at a common pace, cut anywhere) shows whole only here."""
    texts: dict[tuple, str] = {}
    for _, body in bodies:
        for line in body.splitlines():
            if not line.startswith("data:"):
                continue
            try:
                message = json.loads(line[5:])
            except ValueError:
                continue
            data = (message.get("output") or {}).get("data") if isinstance(message, dict) else None
            for index, item in enumerate(data or []):
                ops = item if isinstance(item, list) and all(
                    isinstance(op, list) and len(op) == 3 and op[0] in ("append", "replace", "add", "delete")
                    for op in item) and item else None
                for op, path, value in ops or []:
                    key = (message.get("event_id"), index, json.dumps(path))
                    if op == "append" and isinstance(value, str):
                        texts[key] = texts.get(key, "") + value
                    else:
                        texts[key] = json.dumps(value)
    return list(texts.values())


def leaks(bodies: list[tuple[str, str]], strict: list[str], vendors: list[str]) -> list[tuple[str, str]]:
    found = []
    for url, text in bodies:
        low = text.lower()
        # Gradio's own static bundles mention vendors (e.g. Hugging Face Spaces) in every app.
        static = "/assets/" in url or "/static/" in url
        for word in strict + ([] if static else vendors):
            if word in low:
                found.append((url, word))
    return found


def test_vote_in_the_browser_reveals_names_only_after_and_lands_once(app, browser_page):
    server, db = app
    page = browser_page
    strict, vendors = identity_words()
    tap = Wiretap(page)
    page.goto(server.url + "/")
    page.wait_for_selector("#prompt textarea")
    page.fill("#prompt textarea", "Name three primary colors.")
    page.click("#send")
    page.wait_for_function("() => !document.querySelector('#vote-a').disabled", timeout=240_000)
    page.click("#regenerate")  # same two models answer again; the vote is on what is shown last
    page.wait_for_function("() => document.querySelector('#vote-a').disabled", timeout=30_000)
    page.wait_for_function("() => !document.querySelector('#vote-a').disabled", timeout=240_000)
    answer_a = page.locator("#response-a [data-testid=bot]").last.inner_text().strip()
    answer_b = page.locator("#response-b [data-testid=bot]").last.inner_text().strip()
    assert answer_a and answer_b, "both panes should have streamed an answer"
    assert page.inner_text("#name-a").strip() == "" and page.inner_text("#name-b").strip() == ""

    bodies = tap.bodies()
    # The tap saw the streamed answers, so an empty leak list below means something.
    words = [w for w in re.findall(r"[A-Za-z]{4,}", answer_a + " " + answer_b)][:3]
    assert words and all(any(w in text for _, text in bodies) for w in words), "wiretap missed the stream"
    assert any("/queue/data" in url for url, _ in bodies)
    assert leaks(bodies, strict, vendors) == []
    assert leaks([("page", page.content())], strict, vendors) == []

    page.click("#vote-a")
    page.wait_for_function("() => document.querySelector('#name-a').innerText.includes('Model A:')",
                           timeout=60_000)
    name_a = page.inner_text("#name-a").split(":", 1)[1].strip()
    name_b = page.inner_text("#name-b").split(":", 1)[1].strip()
    assert {name_a, name_b} == set(MODELS)
    assert "Vote stored" in page.inner_text("#status")
    assert page.is_disabled("#vote-b") and page.is_disabled("#send")
    assert any(name_a in text for _, text in tap.bodies()), "the reveal should reach the browser"
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    rows = sqlite3.connect(db).execute("SELECT winner, model_a, model_b, record FROM votes").fetchall()
    assert len(rows) == 1
    winner, model_a, model_b, raw = rows[0]
    record = json.loads(raw)
    assert (winner, model_a, model_b) == ("model_a", name_a, name_b)
    assert record["prompt"] == "Name three primary colors." and record["judge"].startswith("human:")
    for word in re.findall(r"[A-Za-z]{4,}", answer_a)[:3]:
        assert word in record["response_a"]
    assert record["meta"]["anony"] is True and record["meta"]["mode"] == "battle"
    assert record["meta"]["regenerations"] == 1
    latency = record["meta"]["latency"][0]
    assert latency["ttft_a"] > 0 and latency["ttft_b"] > 0

    page.click("#new-round")
    page.wait_for_function("() => document.querySelector('#name-a').innerText.trim() === ''", timeout=30_000)
    assert page.locator("#response-a [data-testid=bot]").count() == 0
    assert page.is_enabled("#send") and page.is_disabled("#vote-a")


def test_over_long_prompt_gets_a_message_and_nothing_is_stored(app, browser_page):
    server, db = app
    page = browser_page
    before = sqlite3.connect(db).execute("SELECT count(*) FROM battles").fetchone()[0]
    page.goto(server.url + "/")
    page.wait_for_selector("#prompt textarea")
    page.fill("#prompt textarea", "x" * (MAX_PROMPT_CHARS + 1))
    page.click("#send")
    page.wait_for_function("() => document.querySelector('#status').innerText.includes('limit')", timeout=60_000)
    assert f"the limit is {MAX_PROMPT_CHARS}" in page.inner_text("#status")
    assert page.is_disabled("#vote-a")
    assert sqlite3.connect(db).execute("SELECT count(*) FROM battles").fetchone()[0] == before
