"""Load and crash test of the vote path: 50 voters, 1,000 votes, one SIGKILL mid-load.

The server is a real separate process serving prompt-set battles (canned answers, so
the load is on the vote path, not on the models). Each voter keeps its own session
cookie. A vote whose answer was lost to the crash is retried with the same battle id
until the server says either "stored" or "already voted": so every vote ends up known,
and the store must hold each acknowledged vote exactly once.
"""

import sqlite3

from app_process import ROOT, AppProcess
import pytest

from vote_load import assert_each_vote_once, vote_through_a_sigkill

pytestmark = pytest.mark.process

PAIRS = ROOT / "data" / "prompts_pairs.jsonl"  # the curated prompt set's pre-generated answers


def test_thousand_votes_fifty_voters_and_a_sigkill(tmp_path):
    config = tmp_path / "arena.toml"
    config.write_text(f"""
[arena]
models = []
pairs = "{PAIRS}"
[arena.rate_limit]  # every voter is on 127.0.0.1, so the per-address limits must allow all 50
actions = 100000
per_address = 100000
requests_per_address = 100000
new_sessions_per_address = 1000
global = 100000
""")
    db = tmp_path / "votes.db"
    server = AppProcess(config, f"sqlite:///{db}", tmp_path / "app.log").start()
    try:
        ledger, acked_before_kill = vote_through_a_sigkill([server], server, timeout_s=240)
    finally:
        server.stop()
    rows = sqlite3.connect(db).execute("SELECT battle_id FROM votes").fetchall()
    assert_each_vote_once([battle_id for (battle_id,) in rows], ledger, acked_before_kill)
    print(f"acked before kill: {len(acked_before_kill)}; resolved by retry after restart: {len(ledger.already)}")
