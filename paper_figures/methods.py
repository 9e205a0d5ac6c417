"""Figure methods: LOO 3-NN AUROC of every pre-training method (lm, sipt, linkbert, mlsm, lsm15,
lsm) per graph family, local consistency marked.

python paper_figures/methods.py [--seeds K] [--executor serial|local|slurm] [--out DIR] [--steps N]
"""

from sipt_lab.cli.figures import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("methods", __file__))
