"""experiments/simulation."""
