"""The time model's trees (autotune/explain/boost.py): they learn what a sum of slopes cannot (an
interaction of two features), keep at least min_leaf rows a leaf, and predict in one pass what they
fitted. No GPU."""
from __future__ import annotations

import numpy as np

from autotune.explain.boost import fit_trees


def corner(X: np.ndarray) -> np.ndarray:
    """1 where both features are above a half, else 0: no weighted sum of the two says it."""
    return ((X[:, 0] > 0.5) & (X[:, 1] > 0.5)).astype(float)


def test_trees_learn_an_interaction_that_a_linear_fit_cannot() -> None:
    rng = np.random.default_rng(0)
    X, Xnew = rng.random((2000, 3)), rng.random((500, 3))  # the third feature is noise
    trees = fit_trees(X, corner(X), rounds=60, rate=0.3, depth=2, min_leaf=20)
    tree_error = np.sqrt(np.mean((trees.predict(Xnew) - corner(Xnew)) ** 2))
    A = np.c_[X, np.ones(len(X))]
    w = np.linalg.lstsq(A, corner(X), rcond=None)[0]
    linear_error = np.sqrt(np.mean((np.c_[Xnew, np.ones(len(Xnew))] @ w - corner(Xnew)) ** 2))
    assert tree_error < 0.1 < 0.25 < linear_error


def test_no_leaf_holds_fewer_than_min_leaf_rows() -> None:
    rng = np.random.default_rng(1)
    X = rng.random((300, 2))
    y = np.where(X[:, 0] > 0.97, 10.0, 0.0)  # 9 or so outliers: a leaf of their own would fit them best
    trees = fit_trees(X, y, rounds=1, rate=1.0, depth=3, min_leaf=40)
    leaves = trees.predict(X)
    assert min(np.sum(leaves == value) for value in np.unique(leaves)) >= 40


def test_too_few_rows_to_split_predict_the_mean_shrunk_by_the_rate() -> None:
    X, y = np.arange(10.0)[:, None], np.arange(10.0)
    trees = fit_trees(X, y, rounds=3, rate=0.5, depth=2, min_leaf=6)  # no split leaves 6 rows a side
    assert np.allclose(trees.predict(X), y.mean() * (1 - 0.5**3))
