"""Reporting: the paper's tables and figures, and the provenance linking them to their inputs."""
