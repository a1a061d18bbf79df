"""Export stored votes: ``python -m arena.export --db URL --out FILE [--format records|fastchat]``.

``records``: one record per line (docs/architecture.md), everything stored, flags in ``meta``
(``anony``, ``identity_leak``, and vote hygiene's ``flags``, see :mod:`arena.hygiene`)
so analysis can filter; nothing is left out unless ``--ratable-only``. ``fastchat``: a JSON list of
battles in Chatbot Arena's clean-battle shape, which FastChat's rating notebooks read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from arena.config import db_url
from arena.store import VoteStore
from pairlab.files import check_out_file, write_text
from pairlab.records import Record, write_records


def to_fastchat(record: Record) -> dict:
    conversation = record.conversation or {}
    return {
        "model_a": record.model_a,
        "model_b": record.model_b,
        "winner": record.winner,
        "judge": record.judge,
        "turn": record.turn,
        "anony": record.meta.get("anony", True),
        "tstamp": record.tstamp,
        "conversation_a": conversation.get("model_a", []),
        "conversation_b": conversation.get("model_b", []),
        "pair_id": record.pair_id,
        "identity_leak": record.meta.get("identity_leak", False),
        "flags": record.meta.get("flags", []),
        # What the vote rule (pairlab.ratable) reads besides the flags: a file read back counts what the arena does.
        "mode": record.meta.get("mode"),
        "voter": record.meta.get("voter"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.export", description=(
        "Export the arena's stored votes for analysis: every vote as a JSONL record (flags kept in meta, "
        "so analysis can filter), or as FastChat battles."),
        epilog="Example: python -m arena.export --db arena.db --out votes.jsonl, then "
               "python -m analysis.ratings --votes votes.jsonl")
    parser.add_argument("--db", required=True, help="SQLAlchemy URL or SQLite file of the vote store")
    parser.add_argument("--out", required=True, type=Path, help="file to write")
    parser.add_argument("--format", choices=("records", "fastchat"), default="records",
                        help="records: JSONL records (default); fastchat: a JSON list of battles")
    parser.add_argument("--ratable-only", action="store_true",
                        help="only the votes ratings count: anonymous, answers that named no model, "
                             "no prompt-set votes, no vote-hygiene flag")
    parser.add_argument("--anomaly-alpha", type=float, default=0.001,
                        help="level of the anomalous-voter test re-run before exporting (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        check_out_file(args.out)
    except ValueError as exc:
        parser.error(str(exc))
    url = db_url(args.db, Path.cwd())
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        parser.error(f"no vote store at {url}")  # rather than export from a new, empty one
    store = VoteStore(url)
    try:
        store.refresh_anomalies(args.anomaly_alpha)  # flags follow the current ratings
        records = store.records(ratable=args.ratable_only)
    finally:
        store.close()
    if args.format == "records":
        write_records(args.out, records)
    else:
        write_text(args.out, json.dumps([to_fastchat(r) for r in records], ensure_ascii=False, indent=1))
    print(f"wrote {len(records)} votes to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
