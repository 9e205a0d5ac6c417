"""Figure 5a: LOO and held-out 3-NN AUROC of LM vs SIPT per graph family, LC marked.

python paper_figures/fig5a.py [--seeds K] [--executor serial|local|slurm] [--out DIR] [--steps N]
       [--preset default|paper] [--encoder default|paper-small|paper-manifolds] [--batched]
"""

from sipt_lab.cli.figures import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("fig5a", __file__))
