"""blocked's CS=1 (C staged through shared memory where its rows are not 16-byte aligned) on the CPU
emulator: the product is right at shapes whose N is not a multiple of 4 (the staged branch) and at ones
whose N is (the 16-byte stores, unchanged), with one tile or many and edge tiles; its constraints and its
shared memory; and mutations of the staged branch are caught."""
from __future__ import annotations

import pytest

from autotune.backends.sim import run
from autotune.backends.verify import TOLERANCE, check
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.families.blocked import stage_bytes, staging_bytes
from autotune.space import Limits, make_config, violations
from tests.emulated import edit, verified

BLOCKED = FAMILIES["blocked"]
# the default tile; a small one (WMITER 4: several sub-tiles along M); two sub-tiles along N with cp.async
CONFIGS = [
    {"CS": 1},
    {"CS": 1, "BM": 64, "BN": 64, "BK": 8, "WM": 32, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4, "BSWAP": 0},
    {"CS": 1, "BM": 64, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "WNITER": 2, "TM": 4, "TN": 4, "ASYNC": 1,
     "STAGES": 3, "BSWAP": 0},
]
# N odd, N = 2 mod 4, N a multiple of 4 (the unchanged store), and a C of several tiles with edges both ways
SHAPES = [(37, 67, 33), (70, 130, 9), (40, 64, 20), (150, 261, 17)]


@pytest.mark.parametrize("values", CONFIGS, ids=["default", "small", "async"])
def test_staged_store_computes_the_product(values: dict[str, int]) -> None:
    config = make_config(BLOCKED, values)
    assert not violations(config)
    source = render(config)
    for shape in SHAPES:
        row = check(config, source, shape, run)
        assert row.status == "ok" and row.error <= TOLERANCE, (shape, row.status, row.reason)


def test_cs0_renders_no_staging_and_keeps_its_name() -> None:
    plain, staged = make_config(BLOCKED, {}), make_config(BLOCKED, {"CS": 1})
    assert "staged" not in render(plain) and "staged" in render(staged)
    assert "CS" not in plain.name and staged.name == plain.name + "_CS1"


def test_constraints_say_what_cs1_needs() -> None:
    assert any("CS=1 needs TN a multiple of 4" in v for v in violations(make_config(BLOCKED, {"CS": 1, "TN": 2})))
    assert any("BLAS=0" in v for v in violations(make_config(BLOCKED, {"CS": 1, "BLAS": 1})))
    assert "CS" not in {p.name for p in FAMILIES["splitk"].params}  # its blocks add partials into C


def test_the_staging_is_within_the_blocks_shared_memory() -> None:
    for values in CONFIGS:
        config = make_config(BLOCKED, values)
        launch = config.geometry(100, 101, Limits())
        staged = staging_bytes(dict(config.values))
        assert launch.shared_bytes == max(stage_bytes(dict(config.values)), staged) >= staged > 0
    assert make_config(BLOCKED, {}).geometry(100, 101, Limits()).shared_bytes == stage_bytes(dict(make_config(BLOCKED, {}).values))


@pytest.mark.parametrize("old, new", [
    ("&staged[(tRow * TM + i) * CS_LD", "&staged[(tRow * TM) * CS_LD"),  # a lane's rows staged over each other
    ("if (rowS + r < M && colS + c < N) C[", "if (rowS + r < M) C["),  # the columns past N written
    ("C[(rowS + r) * N + colS + c] = staged[r * CS_LD + c]", "C[(rowS + r) * N + colS + c] = staged[c * CS_LD + r]"),
])
def test_mutations_of_the_staged_store_are_caught(old: str, new: str) -> None:
    config = make_config(BLOCKED, CONFIGS[1])
    row = verified(config, edit(render(config), old, new), (37, 67, 33))
    assert row.status != "ok", row


def test_a_sample_of_staged_configs_computes_the_product() -> None:
    """CS=1 across tiles, layouts, stages and FMA orders that the search may pair it with, at the verify
    shapes whose N is odd (37 and 33 columns)."""
    from autotune.backends.verify import sample_configs, verify_configs
    from autotune.space import narrow

    configs = sample_configs(narrow(BLOCKED, {"CS": ["1"]}), 8, seed=1)
    assert all(c.values["CS"] == 1 for c in configs)
    rows = verify_configs(configs, ((17, 33, 9), (100, 37, 129)), run)
    bad = [r for r in rows if r.status != "ok"]
    assert not bad, "\n".join(f"{r.config} {r.shape}: {r.status} {r.reason}" for r in bad)


def test_a_search_walks_cs1_only_where_c_rows_are_not_aligned() -> None:
    """At N % 4 == 0 CS=1 stores as CS=0 does (at most with more shared memory): a search there (at_shape)
    spends no trial on it; at odd N both are walked, and a -p that asks for CS=1 only keeps it."""
    from autotune.space import at_shape, narrow

    assert at_shape(BLOCKED, (64, 128, 32)).param("CS").values == (0,)
    assert at_shape(BLOCKED, (64, 127, 32)).param("CS").values == (0, 1)
    assert at_shape(narrow(BLOCKED, {"CS": ["1"]}), (64, 128, 32)).param("CS").values == (1,)


def test_a_search_at_an_aligned_shape_measures_no_cs1_twin(tmp_path) -> None:
    from click.testing import CliRunner

    from autotune import store
    from autotune.cli import cli

    db = tmp_path / "s.sqlite"
    args = ["search", "--M", "8", "--N", "16", "--K", "8", "--family", "blocked", "-p", "BM=32", "-p", "BN=32",
            "-p", "TN=4", "--sampler", "random", "--trials", "6", "--seed", "0", "--backend", "sim", "--db", str(db)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    kernels = [r["kernel"] for r in store.open_readonly(db).query("select kernel from results")]
    assert len(kernels) >= 6 and not any(k.endswith("_CS1") for k in kernels)


@pytest.mark.parametrize("shape, given, want", [
    ((4096, 1023, 16), {}, 1), ((37, 67, 33), {}, 1),  # odd N: the fitted default stages C
    ((4096, 1024, 16), {}, 0),  # aligned rows: nothing to stage
    ((4096, 1023, 16), {"CS": 0}, 0),  # a value the caller gave stays
    ((4096, 1023, 16), {"BLAS": 1}, 0),  # the general signature stores C directly
    ((4096, 1023, 16), {"TN": 2, "TM": 8}, 0),  # a lane's outputs are not whole float4s
])
def test_the_fitted_default_stages_c_where_its_rows_are_not_aligned(shape, given, want) -> None:
    from autotune.space import fitted

    config = fitted(make_config(BLOCKED, given), shape, Limits(), given)
    assert config.values.get("CS", 0) == want
    assert not violations(config)


def test_the_fit_keeps_its_other_changes_beside_cs() -> None:
    """At a large shape whose K and N rows are misaligned the fit copies to whole tiles (AL=2) and stages C."""
    values = BLOCKED.fit(make_config(BLOCKED, {}).values, (4097, 4095, 4093), Limits())
    assert values == {"AL": 2, "CS": 1}


def test_every_familys_fit_at_an_odd_n_names_only_its_own_parameters() -> None:
    """tailsplit's fit is blocked's on its own values, which have no CS: the fit must not add one (a first-use
    job at 4099x1537x256 failed with KeyError: 'CS' when it did)."""
    from autotune.families import families_for
    from autotune.search.ranking import fits

    families = [FAMILIES[name] for name in families_for("fp32")]
    moved, others = fits(families, (4099, 1537, 256), Limits())
    configs = moved + others
    assert {c.family.name for c in configs} == {f.name for f in families}
    assert any(c.family.name == "blocked" and c.values["CS"] == 1 for c in configs)
