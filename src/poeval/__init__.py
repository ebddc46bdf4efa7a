"""poeval: reproducible evaluation of poetry language models."""

__version__ = "0.1.0"
