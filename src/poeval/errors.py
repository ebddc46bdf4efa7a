"""One exception type for bad input, so the CLI and rules can report it without a traceback."""

# The most characters an error quotes of a value (or shows of one line): a 300-byte YAML alias bomb or a
# 100 kB wrong value must not become a message of megabytes.
QUOTE_LIMIT = 200
LINE_LIMIT = 1000


def shorten(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    return text if len(text) <= limit else f"{text[:limit]}…({len(text) - limit} more characters)"


def quote(value) -> str:
    """``repr(value)`` as an error quotes it: at most :data:`QUOTE_LIMIT` characters."""
    try:
        return shorten(repr(value))
    except RecursionError:   # a library caller's deeply nested list or dict
        return f"a {type(value).__name__} nested too deeply"


class PoevalError(Exception):
    """A user-facing error: bad input, bad config or a missing resource. Each line of its message is
    shortened to :data:`LINE_LIMIT` characters, the one cap on what any error quotes."""

    def __init__(self, message: str = "", *args):
        message = "\n".join(shorten(line, LINE_LIMIT) for line in str(message).split("\n"))
        super().__init__(message, *args)


def first_line(err: BaseException) -> str:
    """The first line of a library's error message (its type when empty), for a one-line PoevalError."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
