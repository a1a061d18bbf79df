"""Shared core of the lab: the record type and the model backends (one home for each)."""
