"""Gradient-boosted regression trees in numpy: the time model's second stage (explain.timemodel).

The ridge regression there adds up what each feature costs, one slope each; it cannot say "this
family is slow only where the tiles are few" or "past so many waves this stops mattering". Small trees
fitted one after another to what is left of the error (gradient boosting on the squared error) say such
things from the rows themselves. Each feature is cut into at most BINS bins at its quantiles, and a
tree of fixed depth is grown a level at a time, every node of the level at once (one bincount per
feature and level), so a fit of a few thousand rows takes a fraction of a second.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BINS = 32  # bins per feature: quantile cuts of the training rows


@dataclass(frozen=True)
class Trees:
    """Fitted trees: predict(X) is the sum of every tree's leaf for each row of X."""

    edges: tuple[np.ndarray, ...]  # per feature, the cuts between its bins
    feature: np.ndarray  # (trees, 2**depth - 1): each inner node's feature, level by level
    cut: np.ndarray  # (trees, 2**depth - 1): a row goes right where its bin is above the cut
    leaf: np.ndarray  # (trees, 2**depth): each leaf's value, the learning rate applied

    def predict(self, X: np.ndarray) -> np.ndarray:
        bins = binned(X, self.edges)
        rows = np.arange(len(X))[None, :]
        node = np.zeros((len(self.leaf), len(X)), dtype=np.int64)
        for level in range(self.leaf.shape[1].bit_length() - 1):
            at = node + (2**level - 1)  # inner nodes are stored level by level
            f = np.take_along_axis(self.feature, at, axis=1)
            right = bins[rows, f] > np.take_along_axis(self.cut, at, axis=1)
            node = 2 * node + right
        return np.take_along_axis(self.leaf, node, axis=1).sum(axis=0)


def binned(X: np.ndarray, edges: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.stack([np.searchsorted(e, X[:, j], side="right") for j, e in enumerate(edges)], axis=1)


def fit_trees(X: np.ndarray, y: np.ndarray, rounds: int, rate: float, depth: int, min_leaf: int) -> Trees:
    """`rounds` trees of `depth` levels, each fitted to the residual of those before it; a split leaves at
    least `min_leaf` rows on each side (else the node sends every row left)."""
    quantiles = np.linspace(0, 1, BINS + 1)[1:-1]
    edges = tuple(np.unique(np.quantile(X[:, j], quantiles)) for j in range(X.shape[1]))
    bins = binned(X, edges)
    residual = np.asarray(y, dtype=float).copy()
    features, cuts, leaves = [], [], []
    for _ in range(rounds):
        feature, cut, node = _grow(bins, residual, depth, min_leaf)
        sums = np.bincount(node, weights=residual, minlength=2**depth)
        counts = np.bincount(node, minlength=2**depth)
        leaf = rate * sums / np.maximum(counts, 1)
        residual -= leaf[node]
        features.append(feature)
        cuts.append(cut)
        leaves.append(leaf)
    return Trees(edges, np.array(features), np.array(cuts), np.array(leaves))


def _grow(bins: np.ndarray, residual: np.ndarray, depth: int, min_leaf: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One tree's splits, chosen level by level for the most reduction of the squared residual, and the
    leaf each row lands in. Every node and feature of a level is counted in one bincount over
    (node, feature, bin) cells."""
    rows, features = bins.shape
    nodes_total = 2**depth - 1
    feature, cut = np.zeros(nodes_total, dtype=np.int64), np.full(nodes_total, BINS, dtype=np.int64)
    cells = (np.arange(features) * BINS + bins).ravel()  # row by row: each feature's bin, its own range
    weights = np.repeat(residual, features)
    node = np.zeros(rows, dtype=np.int64)
    for level in range(depth):
        width = 2**level
        at = np.repeat(node * features * BINS, features) + cells
        shape = (width, features, BINS)
        c = np.bincount(at, minlength=width * features * BINS).reshape(shape).cumsum(axis=2)[:, :, :-1]
        s = np.bincount(at, weights=weights, minlength=width * features * BINS).reshape(shape).cumsum(axis=2)[:, :, :-1]
        count = np.bincount(node, minlength=width)[:, None, None]
        total = np.bincount(node, weights=residual, minlength=width)[:, None, None]
        ok = (c >= min_leaf) & (count - c >= min_leaf)
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = s**2 / c + (total - s)**2 / (count - c) - total**2 / count
        gain = np.where(ok, gain, 0.0).reshape(width, -1)  # a split must reduce the error: gain above 0
        best = gain.argmax(axis=1)
        split = gain[np.arange(width), best] > 0
        here = np.flatnonzero(split) + width - 1
        feature[here], cut[here] = best[split] // (BINS - 1), best[split] % (BINS - 1)
        inner = node + width - 1
        node = 2 * node + (bins[np.arange(rows), feature[inner]] > cut[inner])
    return feature, cut, node
