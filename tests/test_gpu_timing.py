"""On a GPU: the timing head start holds the stream for at least its HEAD_START_US (events around
it alone), and a run timed behind it is not charged for that wait."""
import pytest

pytestmark = pytest.mark.gpu


def test_the_head_start_waits_its_time_on_the_stream_and_is_not_timed():
    from cuda.core import EventOptions

    from autotune.backends.cuda.backend import CudaBackend
    from autotune.backends.cuda.timing import HEAD_START_US, time_ms

    backend = CudaBackend(256, 256, 256)
    opts = EventOptions(timing_enabled=True)
    start = backend.stream.record(options=opts)
    backend.head_start()
    end = backend.stream.record(options=opts)
    end.sync()
    assert end - start >= HEAD_START_US / 1000
    # a run that enqueues nothing takes (almost) no time behind the head start
    assert time_ms(lambda: None, backend.stream, head_start=backend.head_start).median_ms < HEAD_START_US / 1000 / 10
