"""Public comparison formats -> one record table, or :class:`pairlab.records.Record` lists.

:func:`read_table` is the one reader every command and the Python API use: files or
folders in, the record table (:mod:`pairlab.record_table`) and the skipped items out. The
format of a file is detected from its first row (see :func:`describe_formats`), one module each:

* :mod:`.own`: the project's records (JSONL, or CSV/Parquet with the record columns);
* :mod:`.alpaca_eval`: AlpacaEval ``annotations.json``;
* :mod:`.arena_hard`: Arena-Hard-Auto ``model_judgment/<judge>/<model>.jsonl``;
* :mod:`.arena`: Chatbot Arena vote releases (33k, 55k, 100k, 140k; JSON, JSONL or
  Parquet), FastChat battles and MT-Bench human judgments;
* :mod:`.battles`: battles without texts (FastChat's clean battles, a plain CSV of
  ``model_a, model_b, winner``);
* :mod:`.pandalm`: the PandaLM test set folder.

Only regular files are read, a line is at most :data:`.rows.MAX_LINE` bytes and a whole-file
JSON at most :data:`.rows.MAX_DOCUMENT` (:mod:`.rows`).

Nothing is dropped silently: a judgment without a verdict is a record with ``winner``
null and ``parse_error`` set (see :mod:`pairlab.records`); a bad row stops the import with
an error naming file and line, unless ``skip_bad`` is asked for, when it is skipped and
reported as an :class:`ImportIssue`. What is not read column-wise is read row by row
(:mod:`.rows`), so memory grows with the records kept, not with parsing.
"""

from .issues import ImportIssue
from .load import FORMATS, describe_formats, format_names

__all__ = ["FORMATS", "ImportIssue", "describe_formats", "format_names", "read_table"]


def __getattr__(name: str):
    # read_table needs pandas and Arrow: a command's --help and start-up should not wait for them.
    if name == "read_table":
        from .columnar import read_table

        return read_table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
