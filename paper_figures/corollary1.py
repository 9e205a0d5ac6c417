"""Corollary 1: oracle NN accuracy on a correlated FT task vs the Corollary 1 bound.

python paper_figures/corollary1.py [--seeds K] [--executor serial|local|slurm] [--out DIR] [--steps N]
"""

from sipt_lab.cli.figures import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("corollary1", __file__))
