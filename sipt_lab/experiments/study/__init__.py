"""experiments/study."""
