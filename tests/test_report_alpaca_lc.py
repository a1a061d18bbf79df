"""A report on AlpacaEval annotations: intervals clustered by prompt (every model's pair
against the baseline shares its instruction), and the length-controlled win rate beside the
raw one, as the ratings CLI gives it."""

import json

from analysis.report.cli import main


def test_alpaca_eval_report_shows_lc_win_rates_and_clusters_by_prompt(shared_data, tmp_path):
    files = [shared_data / "alpaca_eval" / f"{m}.annotations.json" for m in ("alpaca-7b", "Qwen-14B-Chat")]
    assert main(["--votes", *map(str, files), "--out", str(tmp_path), "--quiet", "--bootstrap", "50",
                 "--rating-bootstrap", "20", "--workers", "1"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["clustering"] == "clustered by prompt (805 prompts)"
    (judge,) = [j for j in report["judges"].values() if j["ratings"]["win_rates"]]
    rows = {r["model"]: r for r in judge["ratings"]["win_rates"]["rows"]}
    assert judge["ratings"]["win_rates"]["baseline"] == "gpt4_1106_preview" and set(rows) == {"alpaca-7b", "Qwen-14B-Chat"}
    for r in rows.values():
        # The baseline writes long answers and the judge favours length: controlling for it raises both.
        assert r["lc_lower"] <= r["lc_win_rate"] <= r["lc_upper"] and r["lc_win_rate"] > r["win_rate"]
    markdown = (tmp_path / "report.md").read_text()
    assert "LC win rate %" in markdown and "clustered by prompt (805 prompts)" in markdown.splitlines()[2]
