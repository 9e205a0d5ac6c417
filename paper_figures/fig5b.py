"""Figure 5b: LOO 3-NN AUROC of LM and SIPT on CLIQUES vs edge noise (0-50 %).

python paper_figures/fig5b.py [--seeds K] [--executor serial|local|slurm] [--out DIR] [--steps N]
       [--preset default|paper] [--encoder default|paper-small|paper-manifolds] [--batched]
"""

from sipt_lab.cli.figures import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("fig5b", __file__))
