"""Errors that end a command with exit code 2 and a one-line message."""


class BadInput(Exception):
    """Bad user input: unknown spec/config/variant/mutation, bad --set value, malformed or foreign
    trace, unreachable Spark master, corrupt checkpoint. The CLI prints `error: <message>` on one
    line and exits with code 2; no traceback."""

    exit_code = 2
