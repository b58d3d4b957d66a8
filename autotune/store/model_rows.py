"""The rows the time model learns from that the package ships (tuned/<gpu>-model-rows.json.gz, written by
scripts/ship_model_rows.py from a suite database): every verified (kernel, shape) time of one GPU model, cut to
what a fit reads. search.ranking adds them to a database's own rows, so that a new database's first searches
are ordered by the model too. They are not results: load() and best() never read them."""
from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from autotune.backends.outcome import OK
from autotune.store.db import TUNED


@lru_cache(maxsize=None)
def _document(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def shipped_model_rows(gpu_name: str) -> list[dict[str, Any]]:
    """This GPU model's shipped rows, each as a verified result row of one batch; none for a GPU without them."""
    rows: list[dict[str, Any]] = []
    for path in sorted(TUNED.glob("*-model-rows.json.gz")):
        document = _document(path)
        if document["gpu_name"] == gpu_name:
            rows += [{**row, "status": OK, "batch": 1} for row in document["rows"]]
    return rows
