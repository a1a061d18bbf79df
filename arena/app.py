"""Pairwise Arena: ``python app.py [--config FILE] [--db URL] [--host H] [--port P]`` (or ``pairlab arena``).

Loads the arena config (``data/arena.toml``), the vote store and the configured models,
then serves the anonymous battle page at ``/``, named side-by-side at ``/side-by-side``,
the leaderboard at ``/leaderboard`` and the HTTP API under ``/arena-api``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from a local app

from arena.config import DEFAULT_CONFIG, db_url, load_config  # noqa: E402
from pairlab.cli import missing_modules, prog_name  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog_name("app.py"),
        description="Serve the Pairwise Arena: two anonymous models answer a prompt side by side, people vote, "
                    "the names are revealed after the vote, and the leaderboard rates the models from the votes.",
        epilog="Pages: / (anonymous battles and the prompt set), /side-by-side/ (named), /leaderboard/; the HTTP "
               "API is under /arena-api. It prints the address to open once it is ready (the first start "
               "prepares the embedded models, later starts take seconds). Example: python app.py --port 7860")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG, metavar="FILE",
                        help="arena settings (models, prompt set, limits), a TOML file (default: the shipped data/arena.toml)")
    parser.add_argument("--db", metavar="URL", help="where votes go: a SQLite file path or any SQLAlchemy URL, "
                        "e.g. postgresql+psycopg://user:pw@host/db (default: the config's db, else arena.db in the working directory)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on; 0.0.0.0 for every one "
                        "(default: %(default)s)")
    parser.add_argument("--port", type=int, default=7860, help="port (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    log = logging.getLogger("arena")
    # Bad input is reported before the slow part (Gradio's import, loading models).
    config, store, fresh = _open(parser, args)

    import uvicorn
    from sqlalchemy import make_url

    from arena.battles import Arena
    from arena.web import build_app
    from pairlab.models import DEFAULT_CONFIG as MODELS_CONFIG
    from pairlab.models import engine_options, get_model

    models = {}
    try:
        for name in config.models:
            log.info("loading %s", name)
            models[name] = get_model(name, config=config.model_config or MODELS_CONFIG,
                                     **engine_options(name, config.engine, config.max_inflight,
                                                      config.model_config or MODELS_CONFIG))
        arena = Arena(config, store, models)
    except ValueError as exc:  # a campaign's picks or verdicts that do not fit its pairs
        _discard(store, fresh)
        parser.error(f"--config {args.config}: {exc}")
    except BaseException:
        _discard(store, fresh)
        raise
    arena.warm_up()
    log.info("votes go to %s; %d models, %d curated prompts, %d prompt-set pairs",
             make_url(config.db).render_as_string(hide_password=True), len(models), len(arena.prompts),
             len(arena.pairs))
    app = build_app(arena)
    # Gradio, pandas and the models leave millions of long-lived objects; a full garbage
    # collection walking them all stalls every request in flight for hundreds of ms.
    gc.collect()
    gc.freeze()
    # Any interface: the address a browser on this machine opens.
    url = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::', '') else args.host}:{args.port}/"

    class Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if self.started:  # listening: say where, last, so it is the line a newcomer sees
                print(f"\nThe arena is ready: open {url} (leaderboard: {url}leaderboard/). Ctrl-C stops it.",
                      flush=True)

        def handle_exit(self, sig, frame) -> None:
            arena.close()  # generations stop and waiting battles leave, so SIGTERM ends in seconds
            super().handle_exit(sig, frame)

    # proxy_headers=False: uvicorn would otherwise take X-Forwarded-For from any local
    # peer as the client's address; the arena's own trusted_proxies setting decides that.
    # Open page streams would hold a graceful shutdown forever: they get a few seconds.
    server = Server(uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", proxy_headers=False,
                                   timeout_graceful_shutdown=3))
    try:
        server.run()
    finally:
        store.close()
    return 0


def _open(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """The config, the vote store and the SQLite file this start creates (None if it existed or
    is not SQLite), or ``parser.error`` naming what is wrong (exit 2)."""
    import tomllib

    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from arena.store import VoteStore
    from pairlab.backends.base import BackendError
    from pairlab.files import check_regular
    from pairlab.models import DEFAULT_CONFIG as MODELS_CONFIG
    from pairlab.models import resolve
    from pairlab.records import RecordError

    try:
        config = load_config(args.config, **({"db": db_url(args.db, Path.cwd())} if args.db else {}))
    except FileNotFoundError:
        parser.error(f"--config {args.config}: no such file")
    except tomllib.TOMLDecodeError as exc:
        parser.error(f"--config {args.config}: not valid TOML: {exc}")
    except RecordError as exc:  # a FIFO, a device, a huge or non-UTF-8 file: it names itself
        parser.error(f"--config {exc}")
    except (ValueError, TypeError, KeyError) as exc:
        parser.error(f"--config {args.config}: {exc}")
    backends = set()
    for name in config.models:
        try:
            backends.add(resolve(name, config.model_config or MODELS_CONFIG).backend)
        except (BackendError, OSError, ValueError) as exc:
            parser.error(f"--config {args.config}: {exc}")
    missing = missing_modules(backends, extras=("arena",))
    if missing:  # before the vote store is made: a start that cannot serve leaves nothing behind
        parser.exit(2, f"{parser.prog}: error: the arena's models ({', '.join(config.models)}) run here, and "
                       f"{missing} (the arena extra alone serves only openai: models)\n")
    for what in ("prompts", "pairs", "picks", "verdicts"):
        path = getattr(config, what)
        try:
            if path is not None:
                check_regular(path)
        except RecordError as exc:
            parser.error(f"--config {args.config}: {what} file {exc}")
    if config.picks is not None:  # read here too, before the models load: a bad line is named at once
        from analysis.plan import read_picks

        try:
            read_picks(str(config.picks))
        except ValueError as exc:
            parser.error(f"--config {args.config}: picks file {str(exc).splitlines()[0]}")
    try:
        shown = make_url(config.db).render_as_string(hide_password=True)
    except ArgumentError:
        parser.error(f"--db {config.db!r}: not a database URL (e.g. sqlite:///votes.db, postgresql+psycopg://...)")
    fresh = Path(config.db.removeprefix("sqlite:///")) if config.db.startswith("sqlite:///") else None
    fresh = fresh if fresh is not None and not fresh.exists() else None
    try:
        store = VoteStore(config.db, synchronous=config.synchronous, prompt_set_rated=config.prompt_set_rated)
    except (SQLAlchemyError, ImportError, OSError) as exc:
        # The driver's message has many lines (and SQLAlchemy's background link); the first says it.
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        parser.error(f"cannot open the vote store {shown}: {reason}")
    return config, store, fresh


def _discard(store, fresh: Path | None) -> None:
    """Close the store of a start that failed; a SQLite file this start created goes too."""
    store.close()
    for path in () if fresh is None else (fresh, Path(f"{fresh}-wal"), Path(f"{fresh}-shm"), Path(f"{fresh}-journal")):
        path.unlink(missing_ok=True)
