"""The semi-synthetic simulations: a graph family's dataset, LM vs SIPT arms, their scores."""
