"""benchmarks/cuda_events.paired_ms under a drifting GPU: a call paired with itself must come out even."""
from __future__ import annotations

import pytest

from tests.programs import program

paired_ms = program("benchmarks", "cuda_events").paired_ms


class DriftingGPU:
    """A stand-in for torch.cuda: every call costs 1 ms more per 1,000 calls made so far (clocks settling down
    from a boost), and an event pair reads the calls between them."""

    def __init__(self) -> None:
        self.calls, self.cost = 0, []
        gpu = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.at = 0.0

            def record(self) -> None:
                self.at = sum(gpu.cost)

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: "Event") -> float:
                return end.at - self.at

        self.cuda = type("cuda", (), {"Event": Event})

    def call(self) -> None:
        self.calls += 1
        self.cost.append(1.0 + self.calls / 1000)


@pytest.mark.parametrize("rounds", [2, 6, 8])
def test_a_call_paired_with_itself_measures_even_under_drift(rounds: int) -> None:
    gpu = DriftingGPU()
    first, second = paired_ms(gpu, gpu.call, gpu.call, reps=20, rounds=rounds)
    assert first == pytest.approx(second, rel=1e-12)


def test_an_odd_number_of_rounds_is_refused() -> None:
    gpu = DriftingGPU()
    with pytest.raises(ValueError, match="even"):
        paired_ms(gpu, gpu.call, gpu.call, rounds=5)
