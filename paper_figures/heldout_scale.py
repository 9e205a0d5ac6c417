"""Held-out gain vs the size of G_PT: LM vs SIPT on CLIQUES and TORUS at equal steps per arm at every
size (or, with --passes, a fixed number of passes per sample); LOO and held-out 3-NN AUROC and a
held-out linear probe's macro-F1, each with its paired SIPT - LM gain over seeds.

python paper_figures/heldout_scale.py [--seeds K] [--executor serial|local|slurm] [--out DIR] [--steps N]
                                      [--passes P] [--scale-nodes N ...]
"""

from sipt_lab.cli.figures import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("heldout_scale", __file__))
