"""time_ms on a fake stream whose events stamp a simulated GPU clock: the head start runs before
each timed run's start event, so its wait is never part of a measured time."""
from __future__ import annotations

from autotune.backends.cuda.timing import MIN_REPS, time_ms


class FakeEvent:
    def __init__(self, at_ms: float):
        self.at_ms = at_ms

    def sync(self) -> None:
        pass

    def __sub__(self, other: FakeEvent) -> float:
        return self.at_ms - other.at_ms


class FakeStream:
    """Work enqueued on it advances its clock; an event stamps the clock where it was enqueued."""

    def __init__(self) -> None:
        self.clock_ms, self.log = 0.0, []

    def run(self, what: str, ms: float) -> None:
        self.log.append(what)
        self.clock_ms += ms

    def record(self, options=None) -> FakeEvent:
        self.log.append("event")
        return FakeEvent(self.clock_ms)


def test_the_head_start_precedes_each_start_event_and_stays_out_of_the_time():
    stream = FakeStream()
    timing = time_ms(lambda: stream.run("kernel", 0.25), stream, head_start=lambda: stream.run("wait", 0.5))
    assert timing.median_ms == timing.min_ms == timing.max_ms == 0.25
    timed = stream.log[1:]  # after the warm-up run
    assert timed[:4] == ["wait", "event", "kernel", "event"]
    assert timed.count("wait") == timed.count("kernel") == timing.reps >= MIN_REPS
