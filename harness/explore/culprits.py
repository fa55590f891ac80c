"""The entities a violation's reason names, to point at them in the protocol picture.

Every spec's properties explain a failure in the same words (`ISR member 3 lacks committed offset 0`,
`leader 1 of epoch 2 has uncommitted VoterAssignments ... (offset 2: ...)`, `broker 2 still follows`,
`ISR members {3} are not replicas [1,2]`), so one reading serves every model: a broker's or server's
number after the word that names its part, or a `{set}` of them; an offset's number after `offset`.
A list in brackets (`replicas [1,2]`) is an assignment the reason compares with, not a culprit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ENTITY = re.compile(r"\b(?:broker|server|replica|member|leader|follower|candidate)s? (\d+|\{[\d,\s]*\})")
_OFFSET = re.compile(r"\boffset (\d+)")


@dataclass
class Culprits:
    brokers: set[int] = field(default_factory=set)  # broker or server ids, as the pictures number them
    offsets: set[int] = field(default_factory=set)  # log offsets, as the reason counts them

    def __bool__(self) -> bool:
        return bool(self.brokers or self.offsets)


def culprits_named(reasons: list[str | None]) -> Culprits:
    """The brokers (servers) and offsets named by `reasons` (a violation's, or each violated invariant's)."""
    found = Culprits()
    for reason in filter(None, reasons):
        for named in _ENTITY.findall(reason):
            found.brokers.update(int(n) for n in re.findall(r"\d+", named))
        found.offsets.update(int(n) for n in _OFFSET.findall(reason))
    return found
