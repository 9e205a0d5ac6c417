"""The paper's figures and its theory checked by running the code."""
