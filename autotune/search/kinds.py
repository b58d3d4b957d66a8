"""The samplers a search can use, one registered object each (SamplerKind): what it is, the modules it
needs beyond Optuna, how to build it. Optuna is imported only when one is built, so the command line
lists the names (SAMPLERS) without loading the search. An unknown name is refused in one line that
lists the known ones (sampler_kind), never quietly replaced by random search.

CMA-ES is not registered: every parameter here is categorical (a choice among listed values), which
Optuna's CmaEsSampler does not model; it would sample them all with its independent random sampler,
i.e. it would be random search under another name.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from autotune.errors import AutotuneError, registered

if TYPE_CHECKING:
    from optuna.samplers import BaseSampler

Factory = Callable[[int | None], "BaseSampler"]


@dataclass(frozen=True)
class SamplerKind:
    name: str
    doc: str
    build: Factory  # the seeded sampler (seed None: unseeded)
    # Modules it needs beyond Optuna's own: Optuna imports them lazily, so without them a search
    # would start (and create its database) and then fail at the first trial (samplers.missing).
    needs: tuple[str, ...] = ()
    # True: the loop enqueues every valid config in order and the sampler behind them is never asked
    # for a choice that matters (search.loop._enqueue_grid).
    enqueues_grid: bool = False


def missing(name: str) -> str | None:
    """Why sampler `name` cannot run here (a module it needs is not installed), or None."""
    kind = REGISTRY.get(name)
    needed = kind.needs if kind else ()
    for module in needed:
        try:
            importlib.import_module(module)
        except ImportError:
            return (f"sampler {name} needs {' and '.join(needed)}, and {module} is not installed: "
                    f"pip install 'sgemm-autotune[bench]'")
    return None


def require(name: str) -> None:
    """Refuse, in one line, an unknown sampler or one whose modules are missing (before anything starts)."""
    sampler_kind(name)
    reason = missing(name)
    if reason:
        raise AutotuneError(reason)


def _tpe(seed: int | None) -> BaseSampler:
    import optuna

    return optuna.samplers.TPESampler(seed=seed, constant_liar=True)  # workers in flight spread out


def _tpe_mv(seed: int | None) -> BaseSampler:
    import optuna

    # constant_liar: trials asked ahead (compile-ahead, other workers) count as pending, as for tpe
    return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, constant_liar=True)


def _random(seed: int | None) -> BaseSampler:
    import optuna

    return optuna.samplers.RandomSampler(seed=seed)


def _qmc(seed: int | None) -> BaseSampler:
    import optuna

    # needs scipy only when it samples: search_command and the benchmark check first (require, missing)
    return optuna.samplers.QMCSampler(seed=seed, scramble=True, warn_independent_sampling=False)


def _gp(seed: int | None) -> BaseSampler:
    import optuna

    require("gp")  # fails at construction without them (qmc only at its first sample: checked by the callers)
    # deterministic_objective: a replayed time is the same every time it is asked
    return optuna.samplers.GPSampler(seed=seed, deterministic_objective=True, warn_independent_sampling=False)


# In the order the command line lists them.
REGISTRY: dict[str, SamplerKind] = {k.name: k for k in (
    SamplerKind("tpe", "Optuna's TPE, one parameter at a time, with constant liar (workers in flight spread out)",
                _tpe),
    SamplerKind("random", "uniform over each parameter's values", _random),
    SamplerKind("grid", "every valid config in order, enqueued by the loop (the sampler behind it is random)",
                _random, enqueues_grid=True),
    SamplerKind("tpe-mv", "TPE with multivariate=True, group=True: the joint distribution of each family's "
                "parameters instead of one parameter at a time; the search's default: it needed the fewest "
                "trials of the samplers that work on any space on both exhaustive H200 datasets "
                "(docs/search.md)", _tpe_mv),
    SamplerKind("qmc", "Optuna's QMCSampler (Sobol, scrambled), a space-filling baseline", _qmc, needs=("scipy",)),
    SamplerKind("gp", "Optuna's GPSampler; over several families it models only the family, the rest is "
                "sampled at random; over one family it models every parameter", _gp, needs=("scipy", "torch")),
)}
SAMPLERS = tuple(REGISTRY)


def sampler_kind(name: str) -> SamplerKind:
    """The registered sampler of that name; an unknown name is refused in one line."""
    return registered(REGISTRY, name, "sampler", "--sampler")
