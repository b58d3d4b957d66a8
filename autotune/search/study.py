"""The Optuna side of a search: how configs become trials and results become trial states.

Parameters keep their own names ("BM", "T", "pad") beside "family", so optuna-dashboard sees
one space. A name two families share takes the union of their values: a proposal of a value
outside the chosen family's own list is told PRUNED (nothing is measured). A verified kernel is
a COMPLETE trial whose value is its TFLOP/s; a refused config is PRUNED and a failed one FAIL,
each with its status and reason as user attributes, so that importances and history plots see
only real measurements. The samplers still learn from PRUNED trials that a region is bad.
"""
from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass
from typing import Any

import optuna
import sqlite_utils
from optuna.distributions import BaseDistribution, CategoricalDistribution
from optuna.trial import TrialState

from autotune import store
from autotune.backends.outcome import INVALID, OK, UNRECORDED
from autotune.errors import AutotuneError
from autotune.families import FAMILIES
from autotune.search.storages import check_storage
from autotune.space import Config, Family, Value, at_shape, within
from autotune.space.devices import device_parameters
from autotune.store.claims import ServerClaims, retry_schema_race, shares_claims

REFUSED = (INVALID, UNRECORDED)  # never reached a kernel: PRUNED; every other failure is FAIL


def distributions(families: list[Family]) -> dict[str, BaseDistribution]:
    """One categorical distribution per parameter name, over every searched family's values."""
    out: dict[str, BaseDistribution] = {"family": CategoricalDistribution([f.name for f in families])}
    values: dict[str, list[Value]] = {}
    for f in families:
        for p in f.params:
            values.setdefault(p.name, [])
            values[p.name] += [v for v in p.values if v not in values[p.name]]
    for name, choices in values.items():
        out[name] = CategoricalDistribution(sorted(choices, key=lambda v: (str(type(v)), v)))
    return out


def suggest(trial: optuna.Trial, families: list[Family]) -> Config | None:
    """The config a trial proposes; None when it proposes a value outside the family's own list."""
    dists = distributions(families)
    chosen = trial.suggest_categorical("family", _choices(dists["family"]))  # once: each call asks the sampler
    family = next(f for f in families if f.name == chosen)
    values: dict[str, Value] = {p.name: trial.suggest_categorical(p.name, _choices(dists[p.name]))  # type: ignore[misc]
                                for p in family.params}
    if not within(family, values):
        return None
    return Config(family, tuple(values.items()))


def _choices(dist: BaseDistribution) -> list[Value]:
    assert isinstance(dist, CategoricalDistribution)
    return list(dist.choices)  # type: ignore[arg-type]


def trial_params(config: Config) -> dict[str, Value]:
    return {"family": config.family.name, **dict(config.params)}


def outcome_of(row: dict[str, Any]) -> tuple[TrialState, float | None, dict[str, Any]]:
    """How a results row is told to the study: state, value, user attributes."""
    attrs = {"kernel": row["kernel"], "status": row["status"], "result_id": row.get("id")}
    if row["status"] == OK:
        attrs |= {k: row.get(k) for k in ("time_ms", "tflops", "pct_cublas")}
        return TrialState.COMPLETE, row["tflops"], attrs
    attrs["reason"] = (row.get("reason") or "")[:500]
    return (TrialState.PRUNED if row["status"] in REFUSED else TrialState.FAIL), None, attrs


def tell(study: optuna.Study, trial: optuna.Trial, row: dict[str, Any]) -> None:
    state, value, attrs = outcome_of(row)
    for k, v in attrs.items():
        trial.set_user_attr(k, v)
    # finished already: told by another process that popped the same enqueued trial (loop._told_elsewhere)
    study.tell(trial, value if state == TrialState.COMPLETE else None, state=state, skip_if_finished=True)


@dataclass
class Storage:
    """Where a study lives: Optuna's storage, and the claims server when several hosts share it."""

    optuna: optuna.storages.BaseStorage | None
    claims: ServerClaims | None = None

    @property
    def persistent(self) -> bool:
        return self.optuna is not None

    def close(self) -> None:
        if self.claims:
            self.claims.close()


def open_storage(url: str | Storage | None) -> Storage:
    """None: in memory (an empty string is refused, not taken for None). "scheme://...": a database server (the study and the claims of every
    host). Else a journal file (one host). Bad URLs, servers down and unwritable files are one line."""
    if isinstance(url, Storage):
        return url
    if url is None:
        return Storage(None)
    check_storage(url)  # before Optuna opens it: Optuna writes into whatever file it is given
    try:
        if shares_claims(url):
            return Storage(_rdb(url), ServerClaims(url))
        from optuna.storages.journal import JournalFileBackend

        return Storage(optuna.storages.JournalStorage(JournalFileBackend(url)))
    except Exception as exc:
        raise AutotuneError(f"cannot open --storage {_safe_url(url)}: {' '.join(str(exc).split())[:200]}; "
                            f"give postgresql://USER@HOST/DB (the server must be running) or a journal file path"
                            ) from None


def _rdb(url: str) -> optuna.storages.RDBStorage:
    """Workers starting together race to create Optuna's tables; the loser finds them made."""
    return retry_schema_race(lambda: optuna.storages.RDBStorage(url))


def _safe_url(url: str) -> str:
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True) if "://" in url else url
    except Exception:
        return "(unparsable URL)"


def check_same_space(storage: Storage, name: str, families: list[Family], unknown: set[str] | None = None) -> None:
    """A stored study keeps each parameter's distribution from its first trials, and Optuna cannot
    change one (a --study reused with other --family or -p values): refused in one line, before a
    trial is asked. `unknown`: parameters whose values the caller cannot know yet (the device's), not compared."""
    if storage.optuna is None:
        return
    try:
        study_id = storage.optuna.get_study_id_from_name(name)
    except KeyError:  # a new study
        return
    ours = distributions(families)
    for trial in storage.optuna.get_all_trials(study_id, deepcopy=False):
        for param, dist in trial.distributions.items():
            if param in ours and param not in (unknown or ()) and dist != ours[param]:
                raise AutotuneError(f"study {name} in --storage searched another space (its {param} takes "
                                    f"{_choices(dist)}, this search's {_choices(ours[param])}): give a new --study "
                                    f"name, or the --family and -p values of that study's searches")


def check_named_study(storage: Storage, name: str, families: list[Family], shape: tuple[int, int, int]) -> None:
    """check_same_space before a search's workers start: the families as run_search walks them at the shape
    (space.at_shape); what follows from the device, unknown until the workers start, run_search checks then: the
    values the device sets (Family.device_values: tailsplit's WAVE, splitk's SPLITK), and, where a family needs an
    architecture, the families themselves (a device without it searches the others, space.devices.for_device, and
    every parameter's values are the union of theirs)."""
    if any(f.needs for f in families):
        return
    check_same_space(storage, name, [at_shape(f, shape) for f in families],
                     set().union(*map(device_parameters, families)))


def study_name(families: list[Family], shape: tuple[int, int, int], backend: str, sampler: str,
               seed: int | None, persistent: bool) -> str:
    """A stored study is named by what it searches, so the same command continues it; an
    in-memory one by the run (the trials table keeps runs apart)."""
    M, N, K = shape
    base = f"{'+'.join(f.name + _narrowed_tag(f) for f in families)}-{M}x{N}x{K}-{backend}"
    return f"{base}-{sampler}" if persistent else f"{base}-{sampler}-seed{seed}-{store.now()}-{os.getpid()}"


def _narrowed_tag(family: Family) -> str:
    """A narrowed family (-p BM=128,256) keeps a study of its own: its distributions differ."""
    if FAMILIES.get(family.name) is family:
        return ""
    return "~" + hashlib.sha1(repr([p.values for p in family.params]).encode()).hexdigest()[:8]


def warm_start(study: optuna.Study, db: sqlite_utils.Database, shape: tuple[int, int, int], backend: str,
               gpu_name: str, families: list[Family], redo: store.Redo | None = None) -> set[str]:
    """Tell the study what the database knows and it does not; returns the kernels measured so far.
    A kernel's newest row speaks for it; one that `redo` measures again is neither told nor measured."""
    dists = distributions(families)
    names = {f.name: f for f in families}
    told = {t.user_attrs.get("kernel") for t in study.get_trials(deepcopy=False)}
    seen: set[str] = set()
    for row in reversed(list(store.results(db, shape, backend, gpu_name))):
        family = names.get(row["family"])
        if family is None or row["kernel"] in seen or not within(family, row):  # outside a narrowed space
            continue
        if redo and redo.redoes(row):
            continue
        seen.add(row["kernel"])
        if row["kernel"] in told:
            continue
        params = trial_params(Config(family, tuple((p.name, row[p.name]) for p in family.params)))
        state, value, attrs = outcome_of(row)
        study.add_trial(optuna.trial.create_trial(params=params, distributions={k: dists[k] for k in params},
                                                  state=state, value=value, user_attrs=attrs))
    return seen


def fail_orphans(study: optuna.Study) -> None:
    """Trials left running by a killed search on this host are failed, so that the sampler
    (which treats running trials as pending) does not avoid their region forever."""
    host = socket.gethostname()
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        owner_host, _, pid = str(t.user_attrs.get("owner", "")).rpartition(":")
        if owner_host == host and pid.isdigit() and int(pid) != os.getpid() and not store.alive(int(pid)):
            study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)

