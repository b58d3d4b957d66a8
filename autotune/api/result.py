"""What `autotune.tune()` returns: the figures of the summary it prints, and its exit status."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autotune.search.loop import SearchResult


@dataclass(frozen=True)
class TuneResult:
    """One search's outcome. `status` is the exit status `autotune search` exits with: 0 when it ran
    to its end, 128 + the signal's number when a signal (Ctrl-C) stopped it. `best` is the fastest
    verified row among this search's trials (None when none was valid); `trials` counts them all,
    `new` those measured now rather than found recorded, `statuses` each status's trials."""

    status: int
    study: str
    best: dict[str, Any] | None = None
    trials: int = 0
    new: int = 0
    skipped: int = 0  # proposals with no row: another worker was measuring it, or another family's value
    statuses: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    interrupted: bool = False
    workers: int = 1
    exhausted: bool = False  # every valid config of the space had a result: the search stopped early

    @classmethod
    def of(cls, result: SearchResult, status: int) -> TuneResult:
        return cls(status=status, study=result.study, best=None if result.best is None else dict(result.best),
                   trials=result.trials, new=result.new, skipped=result.skipped, statuses=dict(result.statuses),
                   seconds=result.seconds, interrupted=result.interrupted, workers=result.workers,
                   exhausted=result.exhausted)
