"""Figure 5c/d: UMAP of LM and SIPT embeddings on MOBIUS, coloured by topic.

python paper_figures/fig5cd.py [--seeds K] [--executor serial|local|slurm] [--out DIR] [--steps N]
       [--preset default|paper] [--encoder default|paper-small|paper-manifolds] [--batched]
"""

from sipt_lab.cli.figures import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("fig5cd", __file__))
