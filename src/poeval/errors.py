"""One exception type for bad input, so the CLI and rules can report it without a traceback."""


class PoevalError(Exception):
    """A user-facing error: bad input, bad config or a missing resource."""
