"""The adversarial review's findings, replayed against the real app in its own process.

Each test is a bounded hostile client on 127.0.0.1: a vote-stuffing script with a fresh
cookie per battle, a flood of fresh and invented sessions, a database locked by another
process, a failing database write, and answers that name their model with a version.
"""

import concurrent.futures
import sqlite3
import threading
import time

from app_process import ROOT, AppProcess
from arena_wire import GradioPage
import httpx
import pytest
from support import wait_until

from arena.leaderboard import compute
from arena.store import VoteStore
from pairlab.records import Pair, make_pair_id, read_pairs, write_records

pytestmark = [pytest.mark.model, pytest.mark.process]

PAIRS = ROOT / "data" / "prompts_pairs.jsonl"
MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def start_app(tmp_path, extra: str = "", pairs=PAIRS) -> tuple[AppProcess, str]:
    config = tmp_path / "arena.toml"
    config.write_text(f'[arena]\nmodels = []\npairs = "{pairs}"\n{extra}')
    db = f"sqlite:///{tmp_path / 'votes.db'}"
    return AppProcess(config, db, tmp_path / "app.log").start(), db


def test_a_stuffing_script_with_a_fresh_cookie_per_battle_gets_no_vote_counted(tmp_path):
    # Limits high enough that only the counting rule can stop it.
    app, db = start_app(tmp_path, "[arena.rate_limit]\nper_address = 1000\nnew_sessions_per_address = 1000\n"
                        "requests_per_address = 100000\n")
    target, author, ahead, votes = MODELS[1], {}, 0, 0
    try:
        for _ in range(60):
            with httpx.Client(base_url=app.url, timeout=10) as client:  # a fresh cookie per battle
                battle = client.post("/arena-api/battles").json()
                known = {side: author.get(battle[f"response_{side}"]) for side in "ab"}
                if target in known.values():  # recognised before voting: vote for the target
                    ahead += 1
                choice = "a" if known["a"] == target else "b" if known["b"] == target else "tie"
                voted = client.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": choice})
                assert voted.status_code == 200
                votes += 1
                for side in "ab":  # the reveal teaches which model wrote each text
                    author[battle[f"response_{side}"]] = voted.json()[f"model_{side}"]
    finally:
        app.stop()
    assert ahead >= 10  # the script did recognise battles before voting ...
    store = VoteStore(db)
    try:
        assert store.count_votes() == votes  # ... and every vote is stored ...
        assert store.records(ratable=True) == []  # ... but none is counted
        assert "prompt-set votes, whose fixed answers" in compute(store, bootstrap=10).summary
    finally:
        store.close()


def test_fresh_and_invented_sessions_are_limited_per_address(tmp_path):
    app, db = start_app(tmp_path, "[arena.rate_limit]\nactions = 30\nper_address = 25\nnew_sessions_per_address = 8\n")
    try:
        codes, cookies = [], []
        for i in range(40):  # a fresh (or forged) cookie per request
            forged = {"arena_session": f"invented-{i}.{'0' * 32}"} if i % 2 else {}
            with httpx.Client(base_url=app.url, cookies=forged, timeout=10) as client:
                response = client.post("/arena-api/battles")
                codes.append(response.status_code)
                if response.status_code == 200:
                    cookies.append(response.cookies.get("arena_session", "kept the forged one"))
        # 8 sessions per address; AppProcess's readiness probe loaded the page and took one.
        assert codes.count(200) == 7 and codes.count(429) == 33
        assert "kept the forged one" not in cookies  # a forged cookie is replaced by a signed one
        spoofed = httpx.post(f"{app.url}/arena-api/battles", headers={"X-Forwarded-For": "10.9.9.9"})
        assert spoofed.status_code == 429  # no proxy is trusted: the header names no address
        # Valid sessions share their address's budget: 25 actions in all, 7 spent above.
        spent = []
        for i in range(40):
            with httpx.Client(base_url=app.url, cookies={"arena_session": cookies[i % 7]}, timeout=10) as client:
                spent.append(client.post("/arena-api/battles").status_code)
        assert spent.count(200) == 25 - 7 and set(spent) == {200, 429}
        with httpx.Client(base_url=app.url, timeout=10) as client:  # over the limit: a page, no session
            assert client.get("/").status_code == 200 and "arena_session" not in client.cookies
            page = GradioPage(client)  # Gradio's client-chosen session hash is no session either
            client.cookies.set("arena_session", "made-up.session")
            status = page.outputs_of("ps-next", page.click("ps-next"))["ps-status"]
            assert "reload the page" in status
            # Page events from invented sessions are bounded per address as well.
            joins = [GradioPage(client).join("ps-next").status_code for _ in range(30)]
            assert joins.count(429) >= 5 and joins.count(200) <= 25
    finally:
        app.stop()
    rows = sqlite3.connect(tmp_path / "votes.db").execute("SELECT count(*) FROM battles").fetchone()[0]
    assert rows == 25


def test_a_vote_waits_for_a_database_another_process_holds(tmp_path):
    app, db = start_app(tmp_path)
    try:
        with httpx.Client(base_url=app.url, timeout=60) as client:
            battle = client.post("/arena-api/battles").json()
            locked, committed = threading.Event(), threading.Event()

            def hold_lock() -> None:
                other = sqlite3.connect(tmp_path / "votes.db", isolation_level=None, timeout=30)
                other.execute("BEGIN IMMEDIATE")
                other.execute("INSERT INTO arena_settings VALUES ('probe', 'held')")
                locked.set()
                time.sleep(1.5)  # the vote arrives meanwhile
                other.execute("COMMIT")  # a commit after the vote's read: its snapshot is stale
                committed.set()
                other.close()

            holder = threading.Thread(target=hold_lock)
            holder.start()
            assert locked.wait(10)
            voted = client.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "a"})
            # It waited for the lock rather than failing: it could only be stored after the commit.
            answered_after_commit = committed.is_set()
            holder.join()
        assert voted.status_code == 200, voted.text
        assert answered_after_commit
    finally:
        app.stop()
    assert sqlite3.connect(tmp_path / "votes.db").execute("SELECT count(*) FROM votes").fetchone()[0] == 1


def test_a_failing_database_write_shows_no_model_name(tmp_path):
    app, db = start_app(tmp_path)
    try:
        with httpx.Client(base_url=app.url, timeout=30) as client:
            client.get("/")
            page = GradioPage(client)
            served = page.click("ps-next")
            # Another process breaks the votes table: the app's insert fails with an error
            # whose text carries its SQL parameters, model names among them.
            con = sqlite3.connect(tmp_path / "votes.db", timeout=30)
            con.executescript("ALTER TABLE votes RENAME TO votes_kept; "
                              "CREATE TABLE votes (id INTEGER PRIMARY KEY, battle_id TEXT, disk_says_no TEXT);")
            con.close()
            sent = page.click("ps-vote-a")
            api_battle = client.post("/arena-api/battles").json()
            api_vote = client.post("/arena-api/votes", json={"battle_id": api_battle["battle_id"], "choice": "b"})
    finally:
        app.stop()
    assert "Which answer" in str(page.outputs_of("ps-next", served))
    text = repr(sent) + api_vote.text
    assert not any(m in text for m in MODELS) and "column" not in text
    assert "went wrong on the server" in page.outputs_of("ps-vote-a", sent)["ps-status"]
    assert api_vote.status_code == 500 and "went wrong on the server" in api_vote.json()["error"]
    log = (tmp_path / "app.log").read_text()
    assert "no column named" in log or "no such column" in log  # the details are in the log


def test_answers_naming_a_model_with_a_version_or_handle_are_flagged(tmp_path):
    leaks = ["I am SmolLM2, happy to help.", "As Gemma3 I think so.", "Qwen2.5 here.", "Llama3 says hi.",
             "Trained by HuggingFaceTB.", "Made by meta-llama."]
    source = read_pairs(PAIRS)[0]
    pairs = [Pair(pair_id=make_pair_id(source.prompt, text, f"Plain answer {i}."), prompt=source.prompt,
                  model_a=MODELS[0], model_b=MODELS[1], response_a=text, response_b=f"Plain answer {i}.")
             for i, text in enumerate(leaks)]
    write_records(tmp_path / "pairs.jsonl", pairs)
    app, db = start_app(tmp_path, "prompt_set_rated = true\n[arena.rate_limit]\nper_address = 1000\n"
                        "new_sessions_per_address = 1000\n", pairs=tmp_path / "pairs.jsonl")
    try:
        for _ in range(60):  # 6 pairs: each drawn at least once but with odds of 1 in 10,000
            with httpx.Client(base_url=app.url, timeout=10) as client:
                battle = client.post("/arena-api/battles").json()
                assert client.post("/arena-api/votes", json={"battle_id": battle["battle_id"],
                                                             "choice": "a"}).status_code == 200
    finally:
        app.stop()
    store = VoteStore(db)
    try:
        records = store.records()
        assert {r.pair_id for r in records} == {p.pair_id for p in pairs}  # every leak was served
        assert all(r.meta["identity_leak"] for r in records)
    finally:
        store.close()


@pytest.mark.parametrize("size", [2_000_000])
def test_oversized_bodies_are_refused_before_they_are_read(tmp_path, size):
    app, _ = start_app(tmp_path, "max_body_bytes = 100000\n")
    try:
        with httpx.Client(base_url=app.url, timeout=30) as client:
            client.get("/")
            big = b'{"battle_id": "' + b"x" * size + b'", "choice": "a"}'
            declared = client.post("/arena-api/votes", content=big, headers={"content-type": "application/json"})

            def chunks():
                for i in range(0, len(big), 65536):
                    yield big[i:i + 65536]
            streamed = client.post("/arena-api/votes", content=chunks(), headers={"content-type": "application/json"})
            upload = client.post("/gradio_api/upload", files={"files": ("a.txt", b"y" * size)})
    finally:
        app.stop()
    assert declared.status_code == 413 and streamed.status_code == 413
    assert upload.status_code == 413, upload.text


def test_panes_show_markup_in_answers_as_text(tmp_path):
    hostile = ('<form action="http://127.0.0.1:9/steal"><input name="pw"></form>'
               '![pixel](http://127.0.0.1:9/pixel.png) <img src="http://127.0.0.1:9/i.png"> [a link](http://x.test)')
    source = read_pairs(PAIRS)[0]
    write_records(tmp_path / "pairs.jsonl", [
        Pair(pair_id=make_pair_id(source.prompt, hostile, hostile), prompt=source.prompt, model_a=MODELS[0],
             model_b=MODELS[1], response_a=hostile, response_b=hostile)])
    app, _ = start_app(tmp_path, pairs=tmp_path / "pairs.jsonl")
    try:
        with httpx.Client(base_url=app.url, timeout=30) as client:
            client.get("/")
            page = GradioPage(client)
            shown = page.outputs_of("ps-next", page.click("ps-next"))
    finally:
        app.stop()
    for pane in ("ps-response-a", "ps-response-b"):
        (message,) = shown[pane]
        text = message["content"][0]["text"]
        assert "<form" not in text and "<input" not in text and "<img" not in text and "![" not in text
        assert text.replace("\u200b", "") == hostile  # every character still shown, nothing dropped


def test_a_full_generation_line_turns_new_battles_away(tmp_path):
    config = tmp_path / "arena.toml"
    # One generation slot, so the line behind it is what fills (the engines would admit eight).
    config.write_text(f'[arena]\nmodels = {list(MODELS)!r}\nqueue_max_size = 3\nwaiting_per_address = 10\n'
                      'max_concurrent_generations = 1\n'
                      '[arena.generation]\nmax_new_tokens = 96\n'.replace("'", '"'))
    app = AppProcess(config, f"sqlite:///{tmp_path / 'votes.db'}", tmp_path / "app.log").start()

    def battle(prompt: str, timeout: float) -> int | str:
        try:
            with httpx.Client(base_url=app.url, timeout=timeout) as client:  # a session each
                return client.post("/arena-api/battles", json={"prompt": prompt}).status_code
        except httpx.TimeoutException:
            return "waited"

    try:
        with concurrent.futures.ThreadPoolExecutor(9) as pool:
            first = pool.submit(battle, "Write a long story about the sea.", 5)
            wait_until(lambda: app.status()["generating"] == 1, timeout=30, what="the first battle generating")
            codes = list(pool.map(lambda _: battle("Hi", 5), range(8)))
            first.result()
    finally:
        app.stop()
    # One generating, queue_max_size waiting behind it; the rest refused at once.
    assert codes.count(503) >= 5 and codes.count(200) == 0, codes


def test_behind_a_trusted_proxy_limits_follow_the_client_and_logged_in_votes_count_once(tmp_path):
    private = tmp_path / "panel_pairs.jsonl"  # rated prompt sets are private to their panel
    private.write_text(PAIRS.read_text())
    app, db = start_app(tmp_path, 'prompt_set_rated = true\nvoter_header = "X-Forwarded-User"\n'
                        '[arena.rate_limit]\nper_address = 20\nnew_sessions_per_address = 100\n'
                        'trusted_proxies = ["127.0.0.1"]\n', pairs=private)
    try:
        def battles(headers: dict, n: int) -> list[int]:
            codes = []
            for _ in range(n):
                with httpx.Client(base_url=app.url, headers=headers, timeout=10) as client:
                    codes.append(client.post("/arena-api/battles").status_code)
            return codes

        assert battles({"X-Forwarded-For": "10.0.0.2"}, 22).count(200) == 20  # its own budget ...
        assert battles({"X-Forwarded-For": "10.0.0.3"}, 3) == [200] * 3  # ... not its neighbour's
        # A client cannot pick its address: the proxy appends the real one on the right.
        assert battles({"X-Forwarded-For": "10.0.0.4, 10.0.0.2"}, 1) == [429]
        alice = {"X-Forwarded-User": "alice", "X-Forwarded-For": "10.0.0.5"}
        with httpx.Client(base_url=app.url, headers=alice, timeout=10) as client:  # logged in: no cookie needed
            for _ in range(9):  # alice votes again and again on the 32 pairs
                battle = client.post("/arena-api/battles").json()
                assert client.post("/arena-api/votes", json={"battle_id": battle["battle_id"],
                                                             "choice": "a"}).status_code == 200
            assert "arena_session" not in client.cookies
    finally:
        app.stop()
    store = VoteStore(db, prompt_set_rated=True)
    try:
        alice_votes = store.records()
        counted = store.records(ratable=True)
        assert len(alice_votes) == 9 and all(r.judge.startswith("human:u-") for r in alice_votes)
        assert len(counted) == len({r.pair_id for r in alice_votes})  # her first vote on each pair
    finally:
        store.close()
