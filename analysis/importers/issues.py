"""What an import reports besides records: skipped items, each located by file and item."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ImportIssue"]


@dataclass(frozen=True)
class ImportIssue:
    """An item that was skipped, or a file that holds no votes, located by file and item."""

    path: str
    item: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.item}: {self.message}"
