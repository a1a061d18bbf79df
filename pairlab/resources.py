"""The files pairlab ships: default configs, the curated prompt set, AlpacaEval's difficulty.

They live in the repository's top-level ``data/`` (README commands name ``data/prompts.jsonl``);
``pairlab/data`` links to that folder, so a wheel carries them as pairlab's package data and a
checkout reads them in place. Found through :mod:`importlib.resources`, never as a folder
above some module, so an installed package finds them wherever it lies.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

__all__ = ["data_dir", "data_file"]


def data_dir() -> Path:
    """The folder of shipped data files."""
    # A wheel installs unzipped, so the package's resources are plain files: a Path, which the
    # config loaders need (they resolve paths relative to a config file's folder).
    return Path(os.fspath(files("pairlab") / "data"))


def data_file(name: str) -> Path:
    """One shipped data file, e.g. ``data_file("models.toml")``."""
    return data_dir() / name
