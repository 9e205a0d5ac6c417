"""The LC studies: does SIPT help on samples never pre-trained on, and does LC predict when (the LC-transfer study over a dial, the natural-graph atlas)."""
