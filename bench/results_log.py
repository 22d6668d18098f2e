"""Incremental result files of the bench scripts: ``<out>/results.md`` (a markdown table,
its header written once) and ``<out>/results.jsonl`` (one JSON object per row)."""

from __future__ import annotations

import json
from pathlib import Path


class ResultsLog:
    """Rows appended as each measurement finishes, so a stopped run keeps what it measured."""

    def __init__(self, out: str | Path, header: str):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.md = self.out / "results.md"
        if not self.md.exists():
            self.md.write_text(header + "\n")
        print(header, flush=True)

    def add(self, line: str, row: dict | None = None) -> None:
        """Print ``line``, append it to results.md and ``row`` (if any) to results.jsonl."""
        print(line, flush=True)
        with open(self.md, "a") as fh:
            fh.write(line + "\n")
        if row is not None:
            with open(self.out / "results.jsonl", "a") as fh:
                fh.write(json.dumps(row) + "\n")
