"""experiments/domain."""
