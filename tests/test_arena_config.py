"""The arena config: the shipped file loads, paths are relative to it, bad values are refused."""

from pathlib import Path

import pytest

from arena.config import db_url, load_config

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_config_points_at_files_that_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config()
    assert config.models == ("smollm2-135m-instruct", "gemma3-270m")
    assert config.prompts.exists() and config.pairs.exists()
    # Votes go to the working directory, never beside the shipped config (an installed package).
    assert config.db == f"sqlite:///{tmp_path.resolve() / 'arena.db'}"


def test_relative_paths_follow_the_config_file(tmp_path):
    (tmp_path / "arena.toml").write_text('[arena]\nmodels = ["a", "b"]\ndb = "v.db"\nprompts = "p.jsonl"\n'
                                         'sampling = "weighted"\n[arena.weights]\na = 2\n'
                                         '[arena.generation]\nmax_new_tokens = 7\n')
    config = load_config(tmp_path / "arena.toml")
    assert config.db == f"sqlite:///{tmp_path / 'v.db'}" and config.prompts == tmp_path / "p.jsonl"
    assert config.weights == {"a": 2.0} and config.params.max_new_tokens == 7
    assert load_config(tmp_path / "arena.toml", max_turns=1).max_turns == 1


def test_urls_pass_through_and_bad_values_are_refused(tmp_path):
    assert db_url("postgresql+psycopg://u@h/arena") == "postgresql+psycopg://u@h/arena"
    assert db_url("x.db", tmp_path) == f"sqlite:///{tmp_path / 'x.db'}"
    (tmp_path / "bad.toml").write_text('[arena]\nsampling = "greedy"\n')
    with pytest.raises(ValueError, match="sampling"):
        load_config(tmp_path / "bad.toml")


def test_arena_depends_on_core_and_analysis_only():
    """The arena imports no judges code (the prompt loader lives in pairlab)."""
    import ast

    imported = set()
    for path in [*sorted((ROOT / "arena").glob("*.py")), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add((path.name, node.module.split(".")[0]))
            elif isinstance(node, ast.Import):
                imported.update((path.name, a.name.split(".")[0]) for a in node.names)
    assert not [(f, m) for f, m in imported if m == "judges"]


def test_new_settings_load_and_bad_ones_are_refused(tmp_path):
    (tmp_path / "a.toml").write_text('[arena]\nreveal = "when_done"\nprompt_set_rated = true\nqueue_max_size = 4\n'
                                     '[arena.rate_limit]\nper_address = 7\ntrusted_proxies = ["10.0.0.1"]\n')
    config = load_config(tmp_path / "a.toml")
    assert (config.reveal, config.prompt_set_rated, config.queue_max_size) == ("when_done", True, 4)
    assert config.address_rate_limit == 7 and config.trusted_proxies == ("10.0.0.1",)
    (tmp_path / "b.toml").write_text('[arena]\nreveal = "slowly"\n')
    with pytest.raises(ValueError, match="reveal"):
        load_config(tmp_path / "b.toml")


def test_rating_the_prompt_set_that_ships_with_the_repository_is_refused(tmp_path):
    # Its pairs file names the model behind every fixed answer: rated, any voter could steer.
    import shutil

    from app_process import free_port
    from support import run_module

    public = ROOT / "data" / "prompts_pairs.jsonl"
    config = tmp_path / "arena.toml"
    config.write_text(f'[arena]\nmodels = []\npairs = "{public}"\nprompt_set_rated = true\n')
    done = run_module(str(ROOT / "app.py"), "--config", str(config), "--db", f"sqlite:///{tmp_path / 'v.db'}",
                      "--port", str(free_port()), cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "closed panels with private pairs" in done.stderr and str(public) in done.stderr
    private = shutil.copy(public, tmp_path / "panel_pairs.jsonl")  # a private copy is the panel's own
    config.write_text(f'[arena]\nmodels = []\npairs = "{private}"\nprompt_set_rated = true\n')
    assert load_config(config).prompt_set_rated
