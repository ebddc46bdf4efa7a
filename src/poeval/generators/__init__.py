"""Generators: the architectures, their training and the shared sampling loop."""
