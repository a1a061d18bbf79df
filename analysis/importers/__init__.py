"""Public comparison formats -> :class:`pairlab.records.Record` lists.

Formats read by :func:`load_records` / :func:`import_paths` (files or folders; the format
of a file is detected from its first row, see :func:`describe_formats`), one module each:

* :mod:`.own`: the project's records (JSONL, or CSV/Parquet with the record columns);
* :mod:`.alpaca_eval`: AlpacaEval ``annotations.json``;
* :mod:`.arena_hard`: Arena-Hard-Auto ``model_judgment/<judge>/<model>.jsonl``;
* :mod:`.arena`: Chatbot Arena vote releases (33k, 55k, 100k, 140k; JSON, JSONL or
  Parquet), FastChat battles and MT-Bench human judgments;
* :mod:`.pandalm`: the PandaLM test set folder.

Nothing is dropped silently: a judgment without a verdict is a record with ``winner``
null and ``parse_error`` set (see :mod:`pairlab.records`); a bad row stops the import with
an error naming file and line, unless ``skip_bad`` is asked for, when it is skipped and
reported as an :class:`ImportIssue` (``load_records`` also warns). Files are read row by
row (:mod:`.rows`), so memory grows with the records kept, not with parsing.
"""

from .issues import ImportIssue, ImportResult
from .load import FORMATS, describe_formats, import_paths, iter_records, load_records

__all__ = ["FORMATS", "ImportIssue", "ImportResult", "describe_formats", "import_paths", "iter_records",
           "load_records"]
