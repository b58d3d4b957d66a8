import random

import pytest

from autotune.errors import SpaceError
from autotune.families import FAMILIES, NAIVE, TILED
from autotune.space import (
    Limits,
    check_shape,
    enumerate_space,
    make_config,
    shape_violations,
    valid_configs,
    violations,
)
from autotune.space.devices import gpu_tag


def test_defaults_are_documented_values():
    assert make_config(NAIVE, {}).values == {"x_over": "cols", "bx": 32, "by": 8}
    assert make_config(TILED, {}).values == {"T": 32, "bx": 32, "by": 32, "x_over": "cols", "pad": 0}
    # bx and by default to T
    assert make_config(TILED, {"T": "16"}).values["bx"] == 16


def test_values_are_parsed_to_ints_and_enums():
    c = make_config(TILED, {"T": "16", "pad": "1", "x_over": "rows"})
    assert c.values["T"] == 16 and isinstance(c.values["T"], int)
    assert c.values["x_over"] == "rows"


@pytest.mark.parametrize("given, message", [
    ({"T": "abc"}, "not an integer"),
    ({"T": "12"}, "outside the space"),
    ({"x_over": "diagonal"}, "outside the space"),
    ({"TT": "32"}, "has no parameter 'TT'"),
    ({"T": "32; system(\"rm\")"}, "not an integer"),
])
def test_bad_values_are_refused_with_what_is_allowed(given, message):
    with pytest.raises(SpaceError, match=message):
        make_config(TILED, given)


def test_name_is_derived_from_parameters_and_unique():
    assert make_config(TILED, {}).name == "sgemm_tiled_T32_bx32_by32_xcols_pad0"
    assert make_config(NAIVE, {"x_over": "rows"}).name == "sgemm_naive_xrows_bx32_by8"
    for family in (NAIVE, TILED):  # blocked: the same code path, 2.4M combinations
        names = [c.name for c, _ in enumerate_space(family)]
        assert len(names) == len(set(names))


def test_every_constraint_has_a_reason_and_refuses_something():
    c = make_config(TILED, {"T": 64, "bx": 64, "by": 64})
    assert any("1024" in r for r in violations(c))
    c = make_config(TILED, {"T": 16, "bx": 32, "by": 16})
    assert any("bx must divide T" in r for r in violations(c))
    c = make_config(TILED, {"T": 64, "bx": 2, "by": 16})
    assert any("outputs per thread" in r for r in violations(c))
    small = Limits(max_static_shared=16 * 1024)
    assert any("48 KiB" in r for r in violations(make_config(TILED, {"T": 64, "bx": 64, "by": 16}), small))


def test_valid_space_sizes_are_stable():
    assert len(valid_configs(NAIVE)) == 132
    assert len(valid_configs(TILED)) == 784
    assert all(not violations(c) for c in valid_configs(TILED))


def test_the_chapter_kernel_is_in_the_space():
    assert not violations(make_config(TILED, {"T": 32, "bx": 32, "by": 32}))


@pytest.mark.parametrize("shape", [(0, 1, 1), (1, -4, 1), (1, 1, 0)])
def test_bad_shapes(shape):
    with pytest.raises(SpaceError, match="at least 1"):
        check_shape(*shape)


def test_shapes_too_large_for_int_indexing():
    with pytest.raises(SpaceError, match="2\\*\\*31"):
        check_shape(65536, 65536, 1)
    check_shape(1, 1, 1)


def test_grid_limits_depend_on_shape():
    c = make_config(NAIVE, {"x_over": "cols", "bx": 1024, "by": 1})
    assert shape_violations(c, 70000, 16) and not shape_violations(c, 4096, 4096)


def test_lazy_enumeration_matches_brute_force():
    from autotune.space import count_valid, iter_valid

    for family in (NAIVE, TILED):
        brute = [c.name for c, bad in enumerate_space(family) if not bad]
        assert [c.name for c in iter_valid(family)] == brute
        assert count_valid(family) == len(brute)
    # blocked has parameters no constraint reads (TA, TB, BLAS), which the count multiplies in
    from autotune.families.blocked import BLOCKED
    from autotune.space import narrow

    sub = narrow(BLOCKED, {"BM": ["32"], "BN": ["32"], "BK": ["8"], "WM": ["16"], "WN": ["32"]})
    assert count_valid(sub) == sum(1 for _ in iter_valid(sub)) > 0


def test_blocked_space_is_counted_without_materialising_it():
    import random

    from autotune.families.blocked import BLOCKED
    from autotune.space import combinations, count_valid, narrow, random_valid

    # every config of one layout in the four of TA and TB, each with either signature (BLAS), and each
    # again with RT=1 where a layout has an operand stored along K and the loads regroup evenly; then
    # NT and TT with the plain signature again with PB=1, as the NN and TN kernels they run after the
    # prologue (NN's with RT=1 too: 189040 of them regroup A); and NN's plain ones twice more, with AL=1 and 2;
    # all of that in each of the four FMA orders (ORDER); and all of it again with the early barrier (EARLY=1)
    # except the single-stage kernels, which have no next tile to load early; and those of the plain
    # signature with TN a multiple of 4 whose staging fits once more with C staged (CS=1); and all of those that
    # load through registers from the operands as given (ASYNC=0, AL=0, PB=0, BLAS=0) three times more, with
    # A's, B's or both operands' misaligned rows read as aligned float4s (MA, MB)
    assert combinations(BLOCKED) == 2 * 3 * 256 * 4718592 * 4
    plain = {"MA": ["0"], "MB": ["0"]}
    one_barrier = 4 * (8 * 490976 + 798656 + 2 * 490976 + 189040 + 2 * (490976 + 189040))
    single_stage = count_valid(narrow(BLOCKED, {**plain, "EARLY": ["0"], "STAGES": ["1"], "CS": ["0"]}))
    assert 0 < single_stage < one_barrier
    assert count_valid(narrow(BLOCKED, {**plain, "CS": ["0"]})) == 2 * one_barrier - single_stage
    staged = count_valid(narrow(BLOCKED, {**plain, "CS": ["1"]}))
    assert staged == count_valid(narrow(BLOCKED, {**plain, "CS": ["1"], "BLAS": ["0"], "TN": ["4", "8"]})) > 0
    assert count_valid(narrow(BLOCKED, plain)) == 2 * one_barrier - single_stage + staged
    eligible = count_valid(narrow(BLOCKED, {**plain, "ASYNC": ["0"], "AL": ["0"], "PB": ["0"], "BLAS": ["0"]}))
    for ma, mb in (("1", "0"), ("0", "1"), ("1", "1")):
        assert count_valid(narrow(BLOCKED, {"MA": [ma], "MB": [mb]})) == eligible
    assert count_valid(BLOCKED) == 2 * one_barrier - single_stage + staged + 3 * eligible
    rng = random.Random(1)
    c = random_valid(BLOCKED, rng, fixed={"ASYNC": 1, "STAGES": 4})
    assert c.values["ASYNC"] == 1 and c.values["STAGES"] == 4 and not violations(c)
    assert random_valid(BLOCKED, rng, fixed={"ASYNC": 0, "STAGES": 4}, tries=200) is None


def test_a_row_written_before_a_parameter_existed_reads_as_the_kernel_it_was():
    from autotune.errors import SpaceError
    from autotune.families import FAMILIES, config_of_row

    old = make_config(FAMILIES["blocked"], {"BSWAP": 0})
    row = {"id": 7, "family": "blocked", "kernel": "k", **{k: v for k, v in old.values.items() if k != "BSWAP"}}
    assert config_of_row(row) == old  # no BSWAP column: the unswapped kernel recorded then
    assert config_of_row({**row, "BSWAP": 1}).values["BSWAP"] == 1
    with pytest.raises(SpaceError, match="result 7 .* has no value for BM"):
        config_of_row({**row, "BM": None})  # BM has no `absent`: a broken row, said in one line


def test_a_constraint_that_reads_an_undeclared_parameter_fails_when_the_family_is_declared():
    from autotune.space import Constraint, Family, Launch, Param

    def geometry(p, M, N):
        return Launch((1, 1, 1), (1, 1, 1))

    params = (Param("BM", (32, 64), 32, "rows"),)
    misspelt = Constraint("BM must be even", ("Bm",), lambda p, _: p["Bm"] % 2 == 0)
    with pytest.raises(ValueError, match="Bm"):
        Family("f", "doc", params, (misspelt,), "naive.cu.j2", geometry)


@pytest.mark.parametrize("family", list(FAMILIES.values()), ids=list(FAMILIES))
def test_every_constraint_reads_only_what_it_declares(family):
    """Each rule is handed only its declared parameters: reading another raises KeyError here."""
    rng = random.Random(0)
    for _ in range(300):
        values = {p.name: rng.choice(p.values) for p in family.params}
        for c in family.constraints:
            c.ok({name: values[name] for name in c.reads}, Limits())  # KeyError: it reads an undeclared one


@pytest.mark.parametrize("family", list(FAMILIES.values()), ids=list(FAMILIES))
def test_a_family_allows_exactly_the_values_with_no_violation(family):
    """Family.allows (what the fits check a candidate with) agrees with violations() on random draws,
    refused ones among them."""
    rng = random.Random(1)
    seen = set()
    for _ in range(1000):  # blocked: 0.4% of its combinations are valid
        config = make_config(family, {p.name: rng.choice(p.values) for p in family.params})
        allowed = family.allows(config.values, Limits())
        assert allowed == (not violations(config, Limits()))
        seen.add(allowed)
    assert seen == {True, False} or len(family.constraints) == 0


@pytest.mark.parametrize("name, tag", [
    ("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H100 PCIe", "h100"),
    ("NVIDIA A100-SXM4-80GB", "a100"), ("Tesla V100-SXM2-16GB", "v100"), ("NVIDIA L40S", "l40s"),
    ("NVIDIA GeForce RTX 4090", "geforce-rtx-4090"), ("", "gpu"), (None, "gpu")])
def test_a_gpu_model_has_one_short_name_in_file_names(name, tag):
    """anyshape's, main_job's and the suite's outputs, and the release checks' shipped database, name a model alike:
    the H100's files were once -hbm3 by one rule and -h100-80gb-hbm3 by another."""
    assert gpu_tag(name) == tag
