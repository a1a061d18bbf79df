"""pairlab: pairwise arena and judge-bias lab.

The package holds what the arena and the judges share (the record type, the model backends
and registry), the ``pairlab`` command and the Python API below::

    import pairlab
    votes = pairlab.read_votes("votes.jsonl")
    pairlab.rate(votes)                          # Ratings: shown as a table; .to_frame(), .warnings
    pairlab.bias_report(votes).write("report")   # report.html, report.md, report.json

The analysis is imported on first call: ``import pairlab`` loads no pandas, torch or gradio.
"""

from pairlab.api import Report, bias_report, judge_worth, rate, read_votes

__all__ = ["Report", "bias_report", "judge_worth", "rate", "read_votes"]
