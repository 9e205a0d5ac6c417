"""Theorem 1: SIPT's and the oracle's 3-NN accuracy, and their r-NN accuracy at the radius best recovering G_PT, vs local consistency.

python paper_figures/theorem1.py [--seeds K] [--executor serial|local|slurm] [--out DIR] [--steps N]
       [--preset default|paper] [--encoder default|paper-small|paper-manifolds] [--batched]
"""

from sipt_lab.cli.figures import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("theorem1", __file__))
