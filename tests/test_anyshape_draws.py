"""benchmarks/anyshape.py's draws: the random shapes of a seed, and the thin calls drawn beside them."""
from __future__ import annotations

import pytest

from tests.programs import program


@pytest.fixture(scope="module")
def anyshape():
    return program("benchmarks", "anyshape")


def test_thin_calls_alternate_few_rows_and_few_columns_within_bounds(anyshape):
    drawn = anyshape.thin_shapes(3, 40)
    assert len(drawn) == 40
    for i, ((M, N, K), trans_b) in enumerate(drawn):
        few, other = (M, N) if i % 2 == 0 else (N, M)
        assert 1 <= few <= 8 and 1 <= other <= 16384 and 1 <= K <= 16384
        assert M * N * K >= 1e5
        assert trans_b == (i % 4 == 0), "x·Wᵀ only at every other few-row call"
    assert any(t for _, t in drawn) and len({s for s, _ in drawn}) > 30


def test_thin_calls_are_the_seeds_own(anyshape):
    assert anyshape.thin_shapes(5, 12) == anyshape.thin_shapes(5, 12)
    assert anyshape.thin_shapes(5, 12) != anyshape.thin_shapes(6, 12)
    assert anyshape.thin_shapes(5, 12) == anyshape.thin_shapes(5, 20)[:12]
    assert not {s for s, _ in anyshape.thin_shapes(5, 40)} & set(anyshape.random_shapes(5, 40))


def test_decoding_calls_are_one_row_of_x_wt_within_bounds(anyshape):
    drawn = anyshape.decode_shapes(2, 40)
    assert len(drawn) == 40 and all(trans_b for _, trans_b in drawn)
    assert all(M == 1 and 16 <= N <= 16384 and 16 <= K <= 16384 for (M, N, K), _ in drawn)
    assert drawn == anyshape.decode_shapes(2, 40) and drawn[:10] == anyshape.decode_shapes(2, 10)
    assert len({s for s, _ in drawn}) > 30 and {s for s, _ in drawn} != {s for s, _ in anyshape.decode_shapes(3, 40)}


@pytest.mark.parametrize("flag", ["--count", "--thin", "--decode"])
def test_a_count_that_is_not_a_whole_number_is_one_line_and_exit_2(anyshape, flag, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["anyshape.py", flag, "-3"])
    with pytest.raises(SystemExit) as stop:
        anyshape.main()
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and "'-3': pass a whole number of shapes, 0 or more" in err[-1]
