"""Tools of the repository (a lint of the import layers, a tiny GGUF writer for tests) that import nothing of
the rest of the package: the base stage."""
