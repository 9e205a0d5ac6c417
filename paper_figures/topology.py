"""Topology: Rips persistence of LM vs SIPT embeddings on TORUS and SPHERE vs the Betti numbers.

python paper_figures/topology.py [--seeds K] [--executor serial|local|slurm] [--out DIR] [--steps N]
       [--preset default|paper] [--encoder default|paper-small|paper-manifolds] [--batched]
"""

from sipt_lab.cli.figures import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("topology", __file__))
