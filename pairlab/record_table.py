"""Records as columns: one row per record, the fields the analyses read as pandas columns.

A million records as :class:`pairlab.records.Record` objects cost a Python object per field
before any analysis starts; the report reads them as columns instead. The table holds
the record fields by name (``pair_id, prompt, model_a, model_b, response_a, response_b,
winner, judge, judge_type, family_a, family_b, judge_family, prompt_id, category, prob_a,
strength, tstamp, parse_error, template``) plus what the analyses read from ``meta`` or unknown
fields: ``mode`` and ``voter`` (``meta.mode``, ``meta.voter``), ``suspect``
(``meta.suspect_verdict``), ``baseline`` (``meta.baseline``), ``anony``, ``identity_leak``
and ``flagged`` (the record's own field, else its ``meta``'s; default True, False and False;
``flagged``: vote hygiene's ``flags`` are not empty). Text columns are pandas' Arrow-backed
strings. Which rows ratings count is :func:`pairlab.ratable.ratable_mask` of this table.

Two ways in, the same table out: :func:`from_records` (any importer's records) and
:func:`from_arrow` (a records file read column-wise by :mod:`analysis.importers.columnar`,
checked by the rules of :meth:`pairlab.records.Record.validate`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pairlab.ratable import record_setting
from pairlab.records import BREACHES, HUMAN, JUDGE_TYPES, WINNERS, Record, RecordError

__all__ = ["ARROW_SCHEMA", "COLUMNS", "from_arrow", "from_records", "is_person", "shared_texts", "stack", "text_codes"]

TEXT = ["pair_id", "prompt", "model_a", "model_b", "response_a", "response_b", "winner", "judge", "judge_type",
        "family_a", "family_b", "judge_family", "prompt_id", "category", "parse_error", "template", "mode",
        "baseline", "voter"]
COLUMNS = [*TEXT, "prob_a", "strength", "tstamp", "suspect", "anony", "identity_leak", "flagged"]
_REQUIRED = ("pair_id", "prompt", "model_a", "model_b", "response_a", "response_b", "judge")  # winner may be null
_FROM_META = ("mode", "baseline", "voter")  # text columns read from ``meta`` only
_META = (*_FROM_META, "suspect_verdict", "anony", "identity_leak", "flags")
# What a records file is read as: the record fields the table holds, typed, and of ``meta``
# the keys the analyses read. Other fields are left unread (a line with fifty thousand
# unknown keys costs nothing); a value of another type sends the file to the row reader.
_META_TYPES = {"suspect_verdict": pa.bool_(), "anony": pa.bool_(), "identity_leak": pa.bool_(),
               "flags": pa.list_(pa.string())}
ARROW_SCHEMA = pa.schema(
    [(name, pa.string()) for name in TEXT if name not in _FROM_META]
    + [("prob_a", pa.float64()), ("strength", pa.int64()), ("tstamp", pa.float64()), ("anony", pa.bool_()),
       ("identity_leak", pa.bool_()), ("flags", pa.list_(pa.string())),
       ("meta", pa.struct([(k, _META_TYPES.get(k, pa.string())) for k in _META]))]
)


def _meta_value(record: Record, name: str):
    return record.meta.get(name) if isinstance(record.meta, dict) else None


def from_records(records: Sequence[Record]) -> pd.DataFrame:
    """The table of records already built (in their order)."""
    columns: dict[str, list] = {name: [getattr(r, name) for r in records] for name in TEXT
                                if name not in _FROM_META}
    for name in _FROM_META:
        columns[name] = [_meta_value(r, name) for r in records]
    columns["prob_a"] = [r.prob_a for r in records]
    columns["strength"] = [r.strength for r in records]
    columns["tstamp"] = [r.tstamp for r in records]
    columns["suspect"] = [bool(_meta_value(r, "suspect_verdict")) for r in records]
    columns["anony"] = [bool(record_setting(r, "anony", True)) for r in records]
    columns["identity_leak"] = [bool(record_setting(r, "identity_leak", False)) for r in records]
    columns["flagged"] = [bool(record_setting(r, "flags", False)) for r in records]
    return _typed(pd.DataFrame(columns, columns=COLUMNS))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(frame["response_a"].dtype, pd.CategoricalDtype):
        frame["response_a"], frame["response_b"] = shared_texts(frame["response_a"], frame["response_b"])
    for name in TEXT:
        if name in ("response_a", "response_b"):
            continue
        column = frame[name]
        if column.dtype != "str":
            # Non-text ids (a number as prompt_id) are written as text, as str() would.
            frame[name] = column.map(lambda v: v if v is None or isinstance(v, str) else str(v),
                                     na_action="ignore").astype("str")
    for name in ("prob_a", "strength", "tstamp"):
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
    for name in ("suspect", "anony", "identity_leak", "flagged"):
        frame[name] = frame[name].astype(bool)
    return frame


def _arrow_text(values) -> pa.ChunkedArray:
    if isinstance(values, pa.ChunkedArray):
        return values
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(object)
    return pa.chunked_array([pa.array(list(values) if not isinstance(values, pd.Series) else values.to_numpy(object),
                                      type=pa.large_string())])


def shared_texts(response_a, response_b) -> tuple[pd.Series, pd.Series]:
    """Both response columns as categoricals over one sorted set of texts (Arrow columns, Series
    or lists in; sorted, so a code's order is the texts' order, as Python compares strings)."""
    a, b = _arrow_text(response_a), _arrow_text(response_b)
    if a.type != b.type:
        a, b = a.cast(pa.large_string()), b.cast(pa.large_string())
    both = pa.chunked_array(a.chunks + b.chunks, type=a.type)
    encoded = pc.dictionary_encode(both)
    chunks = encoded.chunks
    if not chunks or any(not c.dictionary.equals(chunks[0].dictionary) for c in chunks[1:]):
        encoded = pc.dictionary_encode(both.cast(pa.large_string()).combine_chunks())
        chunks = [encoded]
    dictionary = chunks[0].dictionary if chunks else pa.array([], pa.string())
    order = pc.array_sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = rank[np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in chunks])] if chunks else \
        np.zeros(0, dtype=np.int64)
    categories = pd.Index(dictionary.take(pa.array(order)).to_pandas(), dtype="str")
    # One dtype for both columns: its texts are checked for uniqueness (hashed) once, and
    # whatever compares the two columns' dtypes finds the same object.
    dtype = pd.CategoricalDtype(categories, ordered=True)
    n = len(a)
    return (pd.Series(pd.Categorical.from_codes(codes[:n], dtype=dtype)),
            pd.Series(pd.Categorical.from_codes(codes[n:], dtype=dtype)))


def stack(table: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``table``'s rows and then ``rows`` (in ``table``'s columns), a new index from 0.

    Responses coded on the same texts (``rows`` taken from ``table``, as the panel's) are
    stacked by their codes: ``pd.concat`` would hash every text of both categories to compare
    them."""
    coded = [name for name in table.columns
             if isinstance(table[name].dtype, pd.CategoricalDtype) and isinstance(rows[name].dtype, pd.CategoricalDtype)
             and (table[name].dtype is rows[name].dtype or table[name].cat.categories is rows[name].cat.categories)]
    rest = [name for name in table.columns if name not in coded]
    out = pd.concat([table[rest], rows[rest]], ignore_index=True)  # the other columns in one call
    for name in coded:
        codes = np.concatenate([table[name].cat.codes.to_numpy(), rows[name].cat.codes.to_numpy()])
        out[name] = pd.Categorical.from_codes(codes, dtype=table[name].dtype)
    return out[list(table.columns)]


def text_codes(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    """``(codes_a, codes_b, texts)`` of a table's responses: equal codes are equal texts, a
    larger code a later text (the columns' own codes where :func:`shared_texts` made them)."""
    a, b = table["response_a"], table["response_b"]
    # Ordered categories come from shared_texts, whose order is the texts' own.
    shared = (isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype)
              and a.cat.ordered and b.cat.ordered and a.cat.categories.equals(b.cat.categories))
    if not shared:
        a, b = shared_texts(a, b)
    return a.cat.codes.to_numpy(), b.cat.codes.to_numpy(), a.cat.categories


def _problem(message: str) -> RecordError:
    return RecordError(None, None, message)


def _child(table: pa.Table, name: str) -> pa.ChunkedArray | None:
    """``meta.<name>`` as a column, or None where no record's meta has it."""
    if "meta" not in table.column_names:
        return None
    meta = table["meta"]
    if not pa.types.is_struct(meta.type) or meta.type.get_field_index(name) < 0:
        return None
    return pc.struct_field(meta, name)


def _truthy(values: pa.ChunkedArray | None, n: int, default: bool) -> np.ndarray:
    """Python's ``bool(value)`` of every value; ``default`` where the value is null."""
    if values is None:
        return np.full(n, default)
    if pa.types.is_boolean(values.type):
        return pc.fill_null(values, default).to_numpy(zero_copy_only=False).astype(bool)
    if pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        return pc.fill_null(pc.not_equal(values, 0), default).to_numpy(zero_copy_only=False).astype(bool)
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return pc.fill_null(pc.greater(pc.utf8_length(values), 0), default).to_numpy(zero_copy_only=False).astype(bool)
    if pa.types.is_null(values.type):
        return np.full(n, default)
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        return pc.fill_null(pc.greater(pc.list_value_length(values), 0), default).to_numpy(
            zero_copy_only=False).astype(bool)
    raise _problem(f"a flag of type {values.type} (expected true/false)")


def _flag_column(table: pa.Table, name: str, default: bool) -> np.ndarray:
    """The record's own field where set, else its meta's, else ``default`` (as
    :func:`pairlab.ratable.record_setting`)."""
    own = table[name] if name in table.column_names else None
    meta = _child(table, name)
    out = _truthy(meta, table.num_rows, default)
    if own is not None and not pa.types.is_null(own.type):
        set_here = pc.is_valid(own).to_numpy(zero_copy_only=False)
        out = np.where(set_here, _truthy(own, table.num_rows, default), out)
    return out


def _text(table: pa.Table, name: str, values: pa.ChunkedArray | None = None) -> pd.Series:
    values = table[name] if values is None and name in table.column_names else values
    if values is None or pa.types.is_null(values.type):
        # An absent column as Arrow nulls: a validity bitmap, not a Python None per row.
        return pd.Series(pd.api.types.pandas_dtype("str").__from_arrow__(
            pa.chunked_array([pa.nulls(table.num_rows, pa.string())])))
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise _problem(BREACHES["text"].format(name=name) + f", got {values.type}")
    return pd.Series(values.to_pandas(), dtype="str").reset_index(drop=True)


def from_arrow(table: pa.Table) -> pd.DataFrame:
    """The table of a records file read column-wise, checked column by column by the rules
    :meth:`Record.validate` checks one record by (:data:`pairlab.records.BREACHES`). A breach raises :class:`RecordError` without a line: the caller reads the file
    again row by row to say which line (:mod:`analysis.importers.columnar`)."""
    names = set(table.column_names)
    try:  # Arrow keeps text that is not UTF-8 as it came (Parquet's, or JSON's); a record may not hold it
        table.validate(full=True)
    except pa.ArrowInvalid:
        raise _problem("invalid UTF-8 (bytes that do not decode)") from None
    for name in _REQUIRED:
        if name not in names or table[name].null_count:
            raise _problem(BREACHES["missing"].format(name=name))
    if "meta" in names and not (pa.types.is_struct(table["meta"].type) or pa.types.is_null(table["meta"].type)):
        raise _problem(BREACHES["meta"])
    columns = {name: _text(table, name) for name in TEXT
               if name in names and name not in (*_FROM_META, "response_a", "response_b")}
    for name in ("response_a", "response_b"):
        if not (pa.types.is_string(table[name].type) or pa.types.is_large_string(table[name].type)):
            raise _problem(BREACHES["text"].format(name=name) + f", got {table[name].type}")
    columns["response_a"], columns["response_b"] = shared_texts(table["response_a"], table["response_b"])
    for name in TEXT:
        if name not in columns and name not in _FROM_META:
            columns[name] = _text(table, name, pa.chunked_array([pa.nulls(table.num_rows, pa.string())]))
    n = table.num_rows
    # The value rules are checked on the Arrow columns: a kernel's pass over a million rows, and
    # the few distinct values compared in Python.
    winner = table["winner"] if "winner" in names else pa.nulls(n, pa.string())
    if winner.null_count:
        parse_error = table["parse_error"] if "parse_error" in names else None
        verdictless = pc.is_null(winner) if parse_error is None else pc.and_(
            pc.is_null(winner), pc.fill_null(pc.equal(parse_error, ""), True))
        if pc.any(verdictless).as_py():
            raise _problem(BREACHES["no verdict"])
    if not set(pc.unique(winner).drop_null().to_pylist()) <= set(WINNERS):
        raise _problem(BREACHES["winner"])
    judge_type = table["judge_type"] if "judge_type" in names else pa.nulls(n, pa.string())
    if judge_type.null_count:
        if pa.types.is_null(judge_type.type):
            judge_type = judge_type.cast(pa.string())
        judge = table["judge"]
        person = pc.or_(pc.equal(judge, HUMAN), pc.starts_with(judge, HUMAN + ":"))  # as records.is_human
        kind = judge_type.type
        judge_type = pc.coalesce(judge_type, pc.if_else(person, pa.scalar("human", kind), pa.scalar("llm", kind)))
        columns["judge_type"] = _text(table, "judge_type", judge_type)
    if not set(pc.unique(judge_type).to_pylist()) <= set(JUDGE_TYPES):
        raise _problem(BREACHES["judge_type"])
    frame = pd.DataFrame(columns)
    for name in _FROM_META:
        frame[name] = _text(table, name, _child(table, name))
    frame["prob_a"] = _numbers(table, "prob_a")
    if ((frame["prob_a"] < 0) | (frame["prob_a"] > 1) | np.isnan(frame["prob_a"]) & _valid(table, "prob_a")).any():
        raise _problem(BREACHES["prob_a"])
    frame["strength"] = _numbers(table, "strength", integer=True)
    if (frame["strength"] < 0).any():
        raise _problem(BREACHES["strength"])
    frame["tstamp"] = _numbers(table, "tstamp")
    frame["suspect"] = _truthy(_child(table, "suspect_verdict"), n, False)
    frame["anony"] = _flag_column(table, "anony", True)
    frame["identity_leak"] = _flag_column(table, "identity_leak", False)
    frame["flagged"] = _flag_column(table, "flags", False)
    return _typed(frame[COLUMNS].copy())


def _valid(table: pa.Table, name: str) -> np.ndarray:
    if name not in table.column_names:
        return np.zeros(table.num_rows, dtype=bool)
    return pc.is_valid(table[name]).to_numpy(zero_copy_only=False)


def _numbers(table: pa.Table, name: str, integer: bool = False) -> np.ndarray:
    if name not in table.column_names or pa.types.is_null(table[name].type):
        return np.full(table.num_rows, np.nan)
    values = table[name]
    ok = pa.types.is_integer(values.type) or (not integer and pa.types.is_floating(values.type))
    if not ok:
        raise _problem(f"{name} must be a {'whole ' if integer else ''}number, got {values.type}")
    return values.to_numpy(zero_copy_only=False).astype(float)


def is_person(table: pd.DataFrame, human_prefix: str | None = None) -> np.ndarray:
    """Which rows are people's votes: judge ``human`` or ``human:<id>`` (:func:`pairlab.records.is_human`),
    or, with ``human_prefix``, any judge whose id starts with it."""
    judge = table["judge"]
    person = (judge == HUMAN) | judge.str.startswith(HUMAN + ":")
    if human_prefix is not None:
        person |= judge.str.startswith(human_prefix)
    return person.to_numpy(dtype=bool)
