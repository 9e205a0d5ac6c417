"""experiments/paper."""
