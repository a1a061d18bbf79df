"""Offline LLM judges: templates, verdict reading and a resumable batch runner.

``python -m judges.generate`` answers prompts with several models and writes PAIRS.jsonl;
``python -m judges.run`` judges those pairs in both orders and writes records.
"""

from judges.runner import Counts, JudgeConfig, judge_pairs, plan_chunks
from judges.run_files import RunFiles
from judges.templates import BUILTIN, JudgeTemplate, TemplateError, get_template
from judges.verdicts import VerdictError, parse_verdict

__all__ = [
    "BUILTIN",
    "Counts",
    "JudgeConfig",
    "JudgeTemplate",
    "RunFiles",
    "TemplateError",
    "VerdictError",
    "get_template",
    "judge_pairs",
    "parse_verdict",
    "plan_chunks",
]
