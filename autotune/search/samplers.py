"""The samplers a search can use, by name (autotune.search.SAMPLERS): make_sampler.

Names:
  tpe       Optuna's TPE, one parameter at a time, with constant liar (workers in flight spread out).
  random    uniform over each parameter's values.
  grid      every valid config in order: enqueued by the loop, the sampler behind it is random.
  gp        Optuna's GPSampler (needs torch and scipy: the `bench` extra). It models only the
            parameters every trial shares: over several families that is the family alone, the
            rest is sampled at random; over one family it models every parameter.
  tpe-mv    TPE with multivariate=True, group=True: the joint distribution of each family's
            parameters (conditional spaces split into groups) instead of one parameter at a time.
            The search's default: it needed the fewest trials of the samplers that work on any
            space on both exhaustive H200 datasets (docs/search.md).
  qmc       Optuna's QMCSampler (Sobol, scrambled), a space-filling baseline (needs scipy).
  model     our own, `ModelSampler`: bound to predicted ceilings by `bind()`, see its doc.
CMA-ES does not apply: every parameter here is categorical (a choice among listed values),
which Optuna's CmaEsSampler does not model; it would sample them all with its independent
random sampler, i.e. it would be random search under another name.

A benchmark binds dataset-specific samplers (the model's ceilings, a non-exhaustive
dataset's configs) to names for the duration of a run with `bind(name, factory)`.
"""
from __future__ import annotations

import contextlib
import importlib
import random
import warnings
from typing import Any, Callable, Iterator

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from autotune.errors import AutotuneError
from autotune.search.study import distributions, trial_params
from autotune.space import Config

Factory = Callable[[int | None], BaseSampler]
CMAES_NOTE = ("does not apply: every parameter is categorical, which CmaEsSampler does not model "
              "(it would be random search under another name)")


# Modules a sampler needs beyond Optuna's own: Optuna imports them lazily, so without them a
# search would start (and create its database) and then fail at the first trial.
NEEDS: dict[str, tuple[str, ...]] = {"gp": ("scipy", "torch"), "qmc": ("scipy",)}


def missing(name: str) -> str | None:
    """Why sampler `name` cannot run here (a module it needs is not installed), or None."""
    needed = NEEDS.get(name, ())
    for module in needed:
        try:
            importlib.import_module(module)
        except ImportError:
            return (f"sampler {name} needs {' and '.join(needed)}, and {module} is not installed: "
                    f"pip install 'sgemm-autotune[bench]'")
    return None


def require(name: str) -> None:
    """Refuse, in one line, a sampler whose dependencies are missing (before anything starts)."""
    reason = missing(name)
    if reason:
        raise AutotuneError(reason)


def _gp(seed: int | None) -> BaseSampler:
    require("gp")
    # deterministic_objective: a replayed time is the same every time it is asked
    return optuna.samplers.GPSampler(seed=seed, deterministic_objective=True, warn_independent_sampling=False)


BUILTIN: dict[str, Factory] = {
    "gp": _gp,
    # constant_liar: trials asked ahead (compile-ahead, other workers) count as pending, as for tpe
    "tpe-mv": lambda seed: optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, constant_liar=True),
    # needs scipy only when it samples: search_command and the benchmark check first (require, missing)
    "qmc": lambda seed: optuna.samplers.QMCSampler(seed=seed, scramble=True, warn_independent_sampling=False),
}
_BOUND: dict[str, Factory] = {}


def make(name: str, seed: int | None) -> BaseSampler | None:
    """The sampler for a name, or None for one this module does not know."""
    factory = _BOUND.get(name) or BUILTIN.get(name)
    if factory is None:
        return None
    with warnings.catch_warnings():  # gp, qmc and TPE's group are "experimental": used knowingly
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return factory(seed)


def make_sampler(name: str, seed: int | None) -> optuna.samplers.BaseSampler:
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True)  # workers in flight spread out
    return make(name, seed) or optuna.samplers.RandomSampler(seed=seed)  # grid: enqueued, see _enqueue_grid



@contextlib.contextmanager
def bind(name: str, factory: Factory) -> Iterator[None]:
    """Make `name` build samplers with `factory` (closing over a dataset) inside the block."""
    earlier = _BOUND.get(name)
    _BOUND[name] = factory
    try:
        yield
    finally:
        if earlier is None:
            _BOUND.pop(name, None)
        else:
            _BOUND[name] = earlier


def _key(params: dict[str, Any]) -> tuple:
    return tuple(sorted(params.items()))


def _measured(study: optuna.Study) -> set[tuple]:
    """Configs the study has already seen (finished trials, whatever their value)."""
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL))
    return {_key(t.params) for t in done}


class CandidateSampler(BaseSampler):
    """Proposes whole configs from a finite list: the first unmeasured one in `order()`.

    The relative search space is every distribution of the families, and sample_relative
    returns every parameter of the chosen config, so the trial's suggest() calls receive
    exactly that config. When the list is exhausted it falls back to random sampling.
    """

    def __init__(self, configs: list[Config], families: list, seed: int | None = None):
        self._params = [trial_params(c) for c in configs]
        self._space = distributions(families)
        self._fallback = optuna.samplers.RandomSampler(seed=seed)

    def order(self, study: optuna.Study, candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return candidates  # declaration order: a grid over the list

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._space

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        seen = _measured(study)
        todo = [p for p in self._params if _key(p) not in seen]
        ordered = self.order(study, todo)
        return dict(ordered[0]) if ordered else {}

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)


class RandomOrder(CandidateSampler):
    """Random search over a finite list: a seeded shuffle, then in that order. Uniform over
    the list, which a projected RandomSampler (see Restricted) is not."""

    def __init__(self, configs: list[Config], families: list, seed: int | None = None):
        configs = list(configs)
        random.Random(seed).shuffle(configs)
        super().__init__(configs, families, seed)


class ModelSampler(CandidateSampler):
    """Our own strategy, model-guided: measure configs in order of their predicted ceiling
    (autotune.model, from SASS counts: no GPU needed), highest first, ties in a seeded random
    order, and skip every config whose ceiling is below the best TFLOP/s measured so far.

    If the ceiling were a true bound, a skipped config could never win; the model is a
    roofline, so it can be optimistic but is rarely pessimistic by much. `slack` keeps a
    config whose ceiling is within that fraction below the best, for the cases where it is.
    Configs without a ceiling (the model has no blocked family) come last and are kept.
    """

    def __init__(self, configs: list[Config], families: list, ceilings: dict[str, float | None],
                 seed: int | None = None, slack: float = 0.0):
        configs = list(configs)
        random.Random(seed).shuffle(configs)  # the tie-break, before a stable sort
        configs.sort(key=lambda c: -(ceilings.get(c.name) or 0.0))
        super().__init__(configs, families, seed)
        self._ceiling = {_key(trial_params(c)): ceilings.get(c.name) for c in configs}
        self.slack = slack

    def order(self, study: optuna.Study, candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        best = max((t.value for t in done if t.value), default=0.0)
        floor = best * (1.0 - self.slack)
        return [p for p in candidates if (c := self._ceiling[_key(p)]) is None or c >= floor]


class Restricted(BaseSampler):
    """Keeps another sampler's proposals inside a finite set of configs: the recorded ones of
    a dataset that does not cover the whole space, so that no trial asks for a config that
    was never measured.

    Each parameter the inner sampler proposes is kept when some unmeasured allowed config
    agrees with it and with the parameters chosen before it (family first, then the
    family's parameters in order); otherwise a value that keeps a config in reach replaces
    it, drawn (seeded) with weight count / (1 + gap): count, the unmeasured configs that
    have it, so that the configs are reached about evenly; gap, its distance from the
    proposal in the list of values (T=64 is next to T=32), so that the proposal's intent
    is kept where the list allows. A whole-config
    proposal (sample_relative) is replaced by the unmeasured allowed config that differs in
    the fewest parameters. The study records what was measured, so the inner sampler learns
    from the replacement, as it would from its own proposal. The replacement is biased
    towards configs near many proposals, so random search over a list is RandomOrder.
    """

    def __init__(self, inner: BaseSampler, configs: list[Config], seed: int | None = None):
        self.inner = inner
        self._params = [trial_params(c) for c in configs]
        self._rng = random.Random(seed)

    def _todo(self, study: optuna.Study) -> list[dict[str, Any]]:
        seen = _measured(study)
        return [p for p in self._params if _key(p) not in seen]

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self.inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        proposal = self.inner.sample_relative(study, trial, search_space)
        todo = self._todo(study)
        if not proposal or not todo:
            return proposal
        nearest = min(todo, key=lambda p: _distance(p, proposal, search_space))
        return {k: nearest[k] for k in proposal if k in nearest}

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        value = self.inner.sample_independent(study, trial, param_name, param_distribution)
        chosen = trial.params
        counts: dict[Any, int] = {}
        for p in self._todo(study):
            if param_name in p and all(p.get(k) == v for k, v in chosen.items()):
                counts[p[param_name]] = counts.get(p[param_name], 0) + 1
        if not counts or value in counts:
            return value
        values = sorted(counts, key=str)  # a fixed order, so the seed alone decides the draw
        weights = [counts[v] / (1 + _gap(param_distribution, v, value)) for v in values]
        return self._rng.choices(values, weights)[0]

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.inner.before_trial(study, trial)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values) -> None:
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.inner.reseed_rng()


def _gap(dist: BaseDistribution, a: Any, b: Any) -> int:
    """How far apart two values lie in a categorical's list (1 for any other mismatch)."""
    if isinstance(dist, CategoricalDistribution) and a in dist.choices and b in dist.choices:
        return abs(dist.choices.index(a) - dist.choices.index(b))
    return int(a != b)


def _distance(candidate: dict[str, Any], proposal: dict[str, Any], space: dict[str, BaseDistribution]) -> tuple:
    """Parameters that differ first, then how far, then a fixed order for ties."""
    differ = [k for k, v in proposal.items() if candidate.get(k) != v]
    return len(differ), sum(_gap(space[k], candidate.get(k), proposal[k]) for k in differ if k in space), _key(candidate)
