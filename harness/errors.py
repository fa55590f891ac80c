"""Errors that end a command with exit code 2 and a one-line message."""


class BadInput(Exception):
    """Bad user input: unknown spec/config/variant/mutation, bad --set value, malformed or foreign
    trace, unreachable Spark master, corrupt checkpoint. The CLI prints `error: <message>` on one
    line and exits with code 2; no traceback."""

    exit_code = 2


class LimitReached(Exception):
    """A search stopped by a limit the user set or a default bound (--max-states, --time-limit, the graph
    engine's state limit) before it could give a verdict. The CLI prints `stopped: <message>` on one line
    and exits with code 3."""

    exit_code = 3


def known_names(names, spec: str, width: int = 160) -> str:
    """Names for a one-line error, cut to `width` characters with a pointer to the full list."""
    names = list(names)
    text = ", ".join(names) or "none"
    if len(text) <= width:
        return text
    shown = []
    for n in names:
        if len(", ".join(shown + [n])) > width:
            break
        shown.append(n)
    return f"{', '.join(shown)}, ... {len(names) - len(shown)} more: `python -m harness describe {spec}`"
