"""A list-, set- or bag-valued field that an action changed by a few elements, as those elements: what left
(-) and what arrived (+), rather than the whole value before and after (a broker's inbox of LeaderAndIsr
requests is hundreds of characters; the one request sent is what matters).

It reads the values as `show` prints them (harness/itf.py: `[a,b]`, `{1,2}`, records in parentheses), since
the explorer's steps carry those texts. `show`'s own element diff (harness/present.py) is written alongside;
the two are meant to become one at merge.
"""

from __future__ import annotations

from collections import Counter

_OPEN, _CLOSE = "([{", ")]}"
SHORT = 40  # characters: a value this short reads best whole, before and after (`{1,2}` -> `{2,3}`)


def shown_elements(text: str) -> list[str] | None:
    """The top-level elements of a shown list or set (`[1,(a=1, b=[2,3])]` -> `1`, `(a=1, b=[2,3])`); None
    when `text` is not one (a number, a name, a record)."""
    if len(text) < 2 or text[0] + text[-1] not in ("[]", "{}"):
        return None
    elements, depth, start = [], 0, 1
    for i, char in enumerate(text[1:-1], 1):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            elements.append(text[start:i])
            start = i + 1
    if depth:
        return None
    inner = text[start:-1]
    return elements + [inner] if elements or inner else []


def element_changes(before: str, after: str) -> tuple[list[str], list[str]] | None:
    """(removed, added) elements when `before` and `after` are lists or sets, not both short, that keep some
    elements in common (each element counted, as in a bag; in the order they are shown); None when the whole
    values read better (short, not collections, or nothing kept)."""
    if max(len(before), len(after)) <= SHORT:
        return None
    old, new = shown_elements(before), shown_elements(after)
    if old is None or new is None or before[0] != after[0]:
        return None
    removed_count, added_count = Counter(old) - Counter(new), Counter(new) - Counter(old)
    if len(old) - sum(removed_count.values()) == 0:  # nothing kept: before and after say it better
        return None

    def in_order(elements: list[str], counts: Counter) -> list[str]:
        picked = []
        for e in elements:
            if counts[e] > 0:
                picked.append(e)
                counts[e] -= 1
        return picked

    return in_order(old, removed_count), in_order(new, added_count)
