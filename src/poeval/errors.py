"""One exception type for bad input, so the CLI and rules can report it without a traceback."""


class PoevalError(Exception):
    """A user-facing error: bad input, bad config or a missing resource."""


def first_line(err: BaseException) -> str:
    """The first line of a library's error message (its type when empty), for a one-line PoevalError."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
