"""Synthetic atlas runs: gains that follow LC by a known line, for the predictor's and advise's tests."""

import numpy as np

LANGUAGES = ("en", "fr")
TASKS = ("category", "head-5", "era", "nationality")
GRAPHS = ("mentions", "co-cited", "tfidf-knn-3", "title-knn-5")
#: The regime a fit of these runs records (what ``advise`` prints and checks settings against).
ATLAS_REGIME = {
    "init": "minilm",
    "pooling": None,
    "max_len": 32,
    "batch_size": 8,
    "budgets": [4, 64],
    "lr": 5e-5,
    "lambda_si": 0.1,
    "loss": "infonce",
    "k": 3,
    "metric": "knn_accuracy",
    "languages": list(LANGUAGES),
    "corpus": "test corpus",
}


def synthetic_atlas_runs(slope=0.2, noise=0.01, budgets=(4, 64), draws=2, lcs=(0.1, 1.0), crossover=0.5, seed=0):
    """Runs of every language x task x graph x budget x draw whose gain is ``slope * (LC - crossover)``
    (twice that at budgets over 4 steps) plus normal ``noise``; the pairs' LCs spread evenly over ``lcs``, the
    encoder's consistency a per-task number the gain does not depend on."""
    rng = np.random.default_rng(seed)
    runs = []
    for language in LANGUAGES:
        grid = iter(rng.permutation(np.linspace(*lcs, len(TASKS) * len(GRAPHS))))
        for task in TASKS:
            own = rng.uniform(0.3, 0.8)
            for graph in GRAPHS:
                lc = float(next(grid))
                for steps in budgets:
                    for draw in range(draws):
                        gain = slope * (lc - crossover) * (1 + (steps > 4)) + rng.normal(0, noise)
                        runs.append(
                            {"language": language, "task": task, "graph": graph, "steps": steps, "split_seed": draw}
                            | {"labelled": 60.0, "lc": lc, "encoder_consistency": own, "gain": gain}
                        )
    return runs
