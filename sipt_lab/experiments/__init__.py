"""Experiments: single simulations and resumable sweeps over grids of configs (``sweep``)."""
