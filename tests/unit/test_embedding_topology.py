"""Rips persistence on k-NN graph geodesics recovers the Betti numbers of point clouds with known shape."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from sipt_lab.evaluation.embedding_topology import (
    LONG_BAR_FRACTION,
    RIPS_CUTOFF,
    UNREACHABLE_FACTOR,
    farthest_points,
    knn_geodesic_distances,
    rips_betti,
)


def _distances(points: np.ndarray) -> np.ndarray:
    return squareform(pdist(points))


def _rotated(points: np.ndarray, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``points`` padded with zeros to ``dim`` coordinates, then rotated at random."""
    padded = np.hstack([points, np.zeros((len(points), dim - points.shape[1]))])
    rotation, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    return padded @ rotation


def _circle(n: int, rng: np.random.Generator, centre: float = 0.0) -> np.ndarray:
    angle = rng.uniform(0, 2 * np.pi, n)
    return np.stack([centre + np.cos(angle), np.sin(angle)], axis=1)


def test_knn_geodesics_follow_the_graph_and_keep_components_apart():
    line = np.arange(8.0)[:, None]
    two_lines = np.vstack([line, line + 100.0])
    geodesic = knn_geodesic_distances(_distances(two_lines), k=2)
    np.testing.assert_allclose(geodesic[:8, :8], np.abs(line - line.T))
    assert np.array_equal(geodesic, geodesic.T)
    np.testing.assert_allclose(geodesic[:8, 8:], UNREACHABLE_FACTOR * 7.0)  # 7 = the longest finite path

    arc = np.linspace(0, np.pi, 60)
    half_circle = np.stack([np.cos(arc), np.sin(arc)], axis=1)  # ends 2 apart in the plane, pi along the arc
    assert knn_geodesic_distances(_distances(half_circle), k=2)[0, -1] == pytest.approx(np.pi, rel=1e-3)


def test_farthest_points_spread_out():
    line = np.array([0.0, 1.0, 2.0, 3.0, 10.0])[:, None]
    assert farthest_points(_distances(line), 3).tolist() == [0, 4, 3]
    assert len(farthest_points(_distances(line), 99)) == 5


@pytest.mark.parametrize("n, seed", [(60, 0), (100, 1)])
def test_circle_in_r10(n, seed):
    rng = np.random.default_rng(seed)
    result = rips_betti(_distances(_rotated(_circle(n, rng), 10, rng)))
    assert result.counts == (1, 1, 0)
    assert result.cutoff == pytest.approx(RIPS_CUTOFF * result.scale)
    assert sum(result.long_lived()) == 2


def test_two_circles_are_two_components_and_two_loops():
    rng = np.random.default_rng(2)
    points = np.vstack([_circle(50, rng), _circle(50, rng, centre=10.0)])
    assert rips_betti(_distances(_rotated(points, 10, rng))).counts == (2, 2, 0)


@pytest.mark.slow
def test_flat_torus_in_r4():
    rng = np.random.default_rng(0)
    side = 12  # a jittered 12 x 12 grid of angles: evenly spread, not regular
    a, b = (
        (
            np.stack(np.meshgrid(np.arange(side), np.arange(side))).reshape(2, -1)
            + rng.uniform(-0.3, 0.3, (2, side * side))
        )
        * 2
        * np.pi
        / side
    )
    torus = np.stack([np.cos(a), np.sin(a), np.cos(b), np.sin(b)], axis=1)
    result = rips_betti(_distances(torus))
    assert result.counts == (1, 2, 1)
    # the same shape at another scale: the same bars, relative to the cutoff
    scaled = rips_betti(_distances(7.0 * torus))
    assert scaled.counts == (1, 2, 1) and scaled.cutoff == pytest.approx(7.0 * result.cutoff)


def test_sphere_from_farthest_point_sample():
    rng = np.random.default_rng(0)
    points = rng.normal(size=(400, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    result = rips_betti(_distances(points), max_points=100)
    assert result.counts == (1, 0, 1)
    assert len(result.kept) == 100 and len(set(result.kept.tolist())) == 100
    lifetimes = np.minimum(result.diagram[:, 2], 1.0) - result.diagram[:, 1]
    assert np.array_equal(result.long_lived(), lifetimes >= LONG_BAR_FRACTION)


def test_coincident_points_are_one_component():
    result = rips_betti(np.zeros((12, 12)))
    assert result.counts == (1, 0, 0) and result.cutoff > 0
