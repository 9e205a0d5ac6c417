"""Corollary 2: LC of the topic task over radius graphs on each surface as n grows.

python paper_figures/corollary2.py [--seeds K] [--executor serial|local|slurm] [--out DIR] [--steps N]
"""

from sipt_lab.cli.figures import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("corollary2", __file__))
