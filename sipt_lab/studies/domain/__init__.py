"""The real-domain runs (``domain run``) and their reports (Table 2, curves)."""
