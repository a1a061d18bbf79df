"""Prepare the embedded models: assemble, convert and cache them so later loads are fast.

Usage: ``python -m pairlab.prepare [MODEL ...]`` (default: every configured model).
"""

from __future__ import annotations

import argparse
import time

from pairlab.models import load_config
from pairlab.weights import prepared_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pairlab.prepare", description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="model ids from data/models.toml (default: all)")
    args = parser.parse_args(argv)
    specs = load_config()
    for model_id in args.models or list(specs):
        start = time.perf_counter()
        directory, sha = prepared_dir(specs[model_id].source)
        print(f"{model_id}: ready in {time.perf_counter() - start:.1f}s at {directory} (sha256 {sha[:12]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
