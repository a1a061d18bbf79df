"""pairlab as a package: the ``pairlab`` command, the Python API and its numbers against the commands'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pairlab.records import Record, write_records
from support import run_module

REPO = Path(__file__).resolve().parents[1]
STRENGTH = {"strong": 1.0, "middle": 0.3, "weak": -0.4, "weakest": -1.0}


def pairlab_command(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return run_module("pairlab.cli", *args, cwd=cwd)


@pytest.fixture(scope="module")
def votes(tmp_path_factory) -> Path:
    """People's votes by the planted strengths, an LLM judge on the same pairs in both orders,
    and votes the leaderboard does not count, every one of them for ``weakest``: cast on
    named models, flagged as identity leaks or by vote hygiene, or on the prompt set."""
    rng = np.random.default_rng(1)
    names = list(STRENGTH)
    records = []
    for n in range(400):
        a, b = rng.choice(len(names), size=2, replace=False)
        p = 1 / (1 + np.exp(-(STRENGTH[names[a]] - STRENGTH[names[b]])))
        common = dict(pair_id=f"p{n}", prompt=f"question {n % 40}", model_a=names[a], model_b=names[b],
                      response_a="answer " * (n % 9 + 1), response_b="- a list\n- " + "of words " * (n % 5))
        winner = "tie" if rng.random() < 0.1 else ("model_a" if rng.random() < p else "model_b")
        records.append(Record(**common, winner=winner, judge=f"human:v{n % 7}"))
        for first in ("model_a", "model_b"):  # the judge sees both orders
            shown = common if first == "model_a" else {
                **common, "model_a": common["model_b"], "model_b": common["model_a"],
                "response_a": common["response_b"], "response_b": common["response_a"]}
            better = shown["model_a"] if rng.random() < p ** 0.8 else shown["model_b"]
            if first == "model_b":
                better = shown["model_b"] if better == common["model_a"] else shown["model_a"]
            verdict = "model_a" if shown["model_a"] == better else "model_b"
            records.append(Record(**shown, winner=verdict, judge="judge-x"))
    for n in range(150):  # not counted: each says "weakest" wins
        other = names[n % 3]
        meta = [{"anony": False}, {"identity_leak": True}, {"mode": "prompt_set", "voter": f"s-{n}"},
                {"flags": ["daily_cap"]}][n % 4]
        records.append(Record(pair_id=f"q{n}", prompt="x", model_a="weakest", model_b=other, response_a="a",
                              response_b="b", winner="model_a", judge=f"human:w{n}", meta=meta))
    path = tmp_path_factory.mktemp("votes") / "votes.jsonl"
    write_records(path, records)
    return path


def test_pairlab_lists_its_commands_and_each_has_help():
    done = pairlab_command("--help")
    assert done.returncode == 0
    for name in ("arena", "generate", "judge", "ratings", "report", "plan"):
        assert f"\n  {name} " in done.stdout, name
    for name, option in (("arena", "--db"), ("generate", "--prompts"), ("judge", "--pairs"),
                         ("ratings", "--votes"), ("report", "--out")):
        shown = pairlab_command(name, "--help")
        assert shown.returncode == 0 and option in shown.stdout, name
    unknown = pairlab_command("rank")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr and "Traceback" not in unknown.stderr


def test_a_command_whose_module_is_missing_says_so_in_one_line(monkeypatch, capsys):
    from pairlab import cli

    monkeypatch.setitem(cli.COMMANDS, "plan", cli.Command("analysis.no_such_planner", "python -m analysis.plan", "-"))
    assert cli.main(["plan", "--votes", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "pairlab plan: not in this version of pairlab (analysis.no_such_planner is missing)"


def test_an_error_keeps_the_command_s_exit_code(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"pair_id": "p"}\n')
    done = pairlab_command("ratings", "--votes", str(tmp_path / "bad.jsonl"))
    same = run_module("analysis.ratings", "--votes", str(tmp_path / "bad.jsonl"), cwd=REPO)
    # The same message, each under the name the user typed.
    assert done.returncode == same.returncode == 2 and done.stderr.startswith("pairlab ratings: error:")
    assert done.stderr.replace("pairlab ratings", "python -m analysis.ratings") == same.stderr


def test_rate_gives_the_ratings_command_s_numbers(votes):
    import pairlab

    done = pairlab_command("ratings", "--votes", str(votes), "--judge", "human", "--json")
    assert done.returncode == 0, done.stderr
    expected = pd.DataFrame(json.loads(done.stdout)["ratings"])
    for given in (votes, pairlab.read_votes(votes)):
        table = pairlab.rate(given)
        assert list(table.columns) == ["model", "rating", "lower", "upper", "rank", "n"]
        assert table["model"].tolist() == expected["model"].tolist() == ["strong", "middle", "weak", "weakest"]
        for column in ("rating", "lower", "upper"):
            np.testing.assert_allclose(table[column].to_numpy(float), expected[column].to_numpy(float), rtol=1e-9)
        assert table["n"].tolist() == expected["n"].tolist()


def test_bias_report_is_report_json(votes, tmp_path):
    import pairlab

    options = ("--bootstrap", "50", "--rating-bootstrap", "20")
    done = pairlab_command("report", "--votes", str(votes), "--out", str(tmp_path / "cli"), "--quiet", *options)
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / "cli" / "report.json").read_text())
    report = pairlab.bias_report(votes, bootstrap=50, rating_bootstrap=20)
    assert report.to_dict() == written
    from_table = pairlab.bias_report(pairlab.read_votes(votes), bootstrap=50, rating_bootstrap=20).to_dict()
    assert {**from_table, "sources": written["sources"]} == written
    paths = report.write(tmp_path / "api")
    assert json.loads(paths["json"].read_text()) == written and paths["html"].stat().st_size > 0
    # The judge's worth alone: the report's entry, without the rest of the report.
    from analysis.report.worth_section import worth_json

    worth = pairlab.judge_worth(votes, judge="judge-x", rating_bootstrap=20)
    assert json.loads(json.dumps(worth_json(worth))) == written["judges"]["judge-x"]["ppi"]
    assert worth.n_human > 0 and worth.effective_votes > 0
    # Shown in a notebook: report.md's opening (the answer per judge), and the worth's sentence,
    # not a dump of every estimate and table.
    opening, markdown = repr(report), (tmp_path / "api" / "report.md").read_text()
    assert opening == report._repr_markdown_() and markdown.startswith(opening.rstrip())
    assert "## In short" in opening and "judge-x" in opening and opening.count("\n## ") == 1
    assert "RaterReport(" not in opening and len(opening) < len(markdown) / 2
    shown = repr(worth)
    assert shown.startswith("JudgeWorth(judge-x: ") and "DataFrame" not in shown and "\n" not in shown
    assert f"{worth.n_human:.0f} human votes count as {worth.effective_votes:.0f}" in shown


_LIGHT = """
import sys
import pairlab
heavy = ("pandas", "numpy", "torch", "gradio", "transformers", "sqlalchemy")
assert not [m for m in sys.modules if m.split(".")[0] in heavy], "import pairlab imports the analysis"
table = pairlab.rate(sys.argv[1])
report = pairlab.bias_report(sys.argv[1], bootstrap=20, rating_bootstrap=10).to_dict()
assert table["model"].iloc[0] == "strong" and "human" in report["judges"]
print(sorted({m.split(".")[0] for m in sys.modules} & {"torch", "gradio", "transformers", "sqlalchemy", "httpx"}))
"""


@pytest.mark.process  # what a fresh interpreter imports
def test_the_analysis_imports_no_ui_model_or_database_library(votes):
    done = subprocess.run([sys.executable, "-c", _LIGHT, str(votes)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function (``from a import b``: ``a``
    and ``a.b``, for ``b`` may be a module)."""
    import ast

    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_no_library_module_imports_a_command_module():
    """A command parses arguments and prints; what others need lives in a library module. The
    command modules: each ``pairlab`` command's (``pairlab.cli.COMMANDS``), ``pairlab.cli`` itself,
    every ``cli.py`` and ``__main__.py``. The planner's command lived in its library (the worth
    and the arena import the planner), which imported ``pairlab.cli``."""
    from pairlab.cli import COMMANDS

    files = {_module_name(p): p for top in ("analysis", "arena", "judges", "pairlab")
             for p in (REPO / top).rglob("*.py")}
    commands = {c.module for c in COMMANDS.values()} | {"pairlab.cli"} | {
        name for name in files if name.rsplit(".", 1)[-1] in ("cli", "__main__")}
    assert {"analysis.plan.cli", "judges.run", "arena.app"} <= commands
    crossing = sorted((name, imported) for name, path in files.items() if name not in commands
                      for imported in _imported(path) & commands)
    assert crossing == []


@pytest.mark.process  # runs make
def test_make_targets_write_bytecode_whatever_the_environment_says():
    """Where PYTHONDONTWRITEBYTECODE is set (as on the project's machines) and uv compiled nothing
    at install, every interpreter a target started compiled its modules again, every run."""
    probe = 'probe: ; @echo "[$${PYTHONDONTWRITEBYTECODE-unset}]"'
    done = subprocess.run(["make", "-s", "--eval", probe, "probe"], cwd=REPO, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[unset]"
