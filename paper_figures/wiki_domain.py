"""The wiki domain (Theorem 1 in a real domain): SIPT's relative error reduction over LM-only
against the local consistency of the article category over each pre-training graph.

python paper_figures/wiki_domain.py [--seeds K] [--preset cpu|full] [--executor serial|local|slurm] [--out DIR]

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
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "wiki"))
    args = parser.parse_args()
    raise SystemExit(main(["domain", "run", "wiki", "--seeds", args.seeds, "--preset", args.preset,
                           "--executor", args.executor, "--out", args.out]))
