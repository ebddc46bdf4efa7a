"""Data stage: the quatrain corpus (reading, filtering, de-duplication, splits, HUMAN samples)."""
