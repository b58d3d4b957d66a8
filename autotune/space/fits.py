"""A family's default fitted to a shape (Family.fit, whose contract is space.config.Fit): what a search measures
first and what `measure -p` runs around the values it is given."""
from __future__ import annotations

from typing import Iterable, Mapping

from autotune.space.config import Config, Limits, Params, Value, make_config


def keeps(keep: frozenset[str], before: Params, after: Params) -> bool:
    """True where `after` changes none of the values `keep` names from `before` (a Fit's step that may be taken)."""
    return all(after[name] == before[name] for name in keep if name in after)


def fitted(default: Config, shape: tuple[int, int, int], limits: Limits, given: Mapping[str, Value] | None = None) -> Config:
    """The default config `default` (made from `given`) fitted to the shape where its family has a fit
    (Family.fit), as a search's first trial; the fit changes no value in `given` and derives the others from
    them (-p BN=128: the splits for a 128-wide tile, not for the tile the fit would have widened it to), and
    `given` is passed again so that defaults which depend on other values (blocked's RT on PB) follow what the
    fit changed."""
    given = given or {}
    fit = default.family.fit
    changes = {k: v for k, v in fit(default.values, shape, limits, frozenset(given)).items() if k not in given} if fit else {}
    return make_config(default.family, {**given, **changes}) if changes else default


def fitted_around(configs: list[Config], shape: tuple[int, int, int], limits: Limits, names: Iterable[str]) -> list[Config]:
    """Each config fitted to the shape around its values of `names`, which stay (measure's -p NAME=V1,V2)."""
    return [fitted(c, shape, limits, {name: c.values[name] for name in names}) for c in configs]
