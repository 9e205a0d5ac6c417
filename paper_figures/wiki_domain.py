"""The wiki domain (Theorem 1 in a real domain): SIPT's relative error reduction over LM-only
against the local consistency of the article category over each pre-training graph, with further
pre-training methods beside it when asked (linkbert per graph; mlsm, lsm15, lsm per seed, as levels).

python paper_figures/wiki_domain.py [--seeds K] [--preset cpu|full] [--executor serial|local|slurm] [--out DIR]
                                    [--graphs G ...] [--lambdas L ...] [--methods NAME ...]

Runs `sipt-lab domain run wiki` (resumable cells) and leaves rre_vs_lc.png/.pdf, summary.json and
comparison.csv in DIR (default paper_figures/out/wiki).
"""

import argparse
from pathlib import Path

from sipt_lab.cli.main import main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="3")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--executor", default="local")
    parser.add_argument("--graphs", nargs="+", default=[], help="pre-training graphs (default: all of wiki's)")
    parser.add_argument("--lambdas", nargs="+", default=[], help="SIPT's λ grid (default: the preset's)")
    parser.add_argument("--methods", nargs="+", default=[], help="further methods: linkbert, mlsm, lsm15, lsm")
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "wiki"))
    args = parser.parse_args()
    extra = [
        *(["--graphs", *args.graphs] if args.graphs else []),
        *(["--lambdas", *args.lambdas] if args.lambdas else []),
        *(["--methods", *args.methods] if args.methods else []),
    ]
    raise SystemExit(
        main(
            [
                "domain",
                "run",
                "wiki",
                "--seeds",
                args.seeds,
                "--preset",
                args.preset,
                "--executor",
                args.executor,
                "--out",
                args.out,
                *extra,
            ]
        )
    )
