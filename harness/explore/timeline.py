"""The message timeline of a run: a sequence diagram (as Stateright draws one) with one lane per broker or
controller, time going right one column per step, and each request an arrow from the step that sent it to
the step that delivered it.

The specs' protocol views list the messages in flight in each state (`"messages"`: src, dst, label, text,
and `stale`, why a message is outdated in that state or ""); the timeline matches those lists across the
run's states: a message that appears is sent at that step, one that disappears is delivered (or dropped)
there. Identical messages in flight together are told apart first in, first out. A model whose requests are
exchanged within one step (kip642: a rule is a whole Fetch or VoteRequest round trip) has no messages in its
states; its view declares instead which rules are exchanges (`"exchanges"`: rule -> the parameters naming
sender and receiver, the lane's noun and a label), and each such action is an arrow within its step.
Geometry is computed here; the `timeline` macro of templates/macros.html draws it as SVG.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from dataclasses import dataclass

STEP_WIDTH = 34  # px between two steps' columns
LANE_HEIGHT = 30  # px between two lanes
LANE_LABEL_WIDTH = 86  # px left of step 0 for the lane names
TOP = 22  # px above the first lane for the step numbers


@dataclass
class Arrow:
    src: str
    dst: str
    label: str  # short, drawn near the arrow's start
    text: str  # the whole message, as a tooltip
    sent: int  # the step whose action put it in flight (0: in flight in the initial state)
    delivered: int | None = None  # the step that took it out of flight; None: still in flight at the end
    stale: str = ""  # why it is outdated (an older controller epoch, a zombie's), in the last state it was in flight
    nth: int = 0  # among the arrows sent from the same lane at the same step: drawn a little apart


@dataclass
class Timeline:
    lanes: list[str]
    arrows: list[Arrow]
    steps: int  # the run's last step index

    @property
    def width(self) -> int:
        return LANE_LABEL_WIDTH + (self.steps + 1) * STEP_WIDTH + 80  # room for the last arrow's label

    @property
    def height(self) -> int:
        return TOP + len(self.lanes) * LANE_HEIGHT

    @property
    def end(self) -> int:
        """Where an arrow still in flight at the end stops: past the last step's column."""
        return self.x(self.steps) + STEP_WIDTH // 2

    step_width = STEP_WIDTH
    label_width = LANE_LABEL_WIDTH

    def x(self, step: int) -> int:
        return LANE_LABEL_WIDTH + step * STEP_WIDTH + STEP_WIDTH // 2

    def y(self, lane: str) -> int:
        return TOP + self.lanes.index(lane) * LANE_HEIGHT + LANE_HEIGHT // 2


def _message_key(message: dict) -> tuple:
    return message["src"], message["dst"], message["text"]


def _lane_order(name: str) -> tuple:
    """Controllers (and anything not numbered) first, then brokers and servers by number."""
    number = re.search(r"(\d+)$", name)
    return (1, int(number.group(1)), name) if number else (0, 0, name)


def exchange_arrow(drawing: dict, action, step: int) -> Arrow | None:
    """The arrow of an action its state's view declares an exchange (see the module's docstring), or None."""
    exchange = (drawing.get("exchanges") or {}).get(action.rule) if action is not None else None
    if exchange is None:
        return None
    params = dict(action.params)
    src, dst = (f"{exchange['lane']} {params[exchange[end]]}" for end in ("src", "dst"))
    return Arrow(src, dst, exchange["label"], f"{exchange['label']} {src} -> {dst}, answered in the same step",
                 step, step)


def message_timeline(drawings: list[dict], actions: list | None = None) -> Timeline | None:
    """The timeline of a run from its states' protocol views (and the actions that led to them, for
    exchanges); None when there is nothing to draw (a spec without a network, a run that sent nothing)."""
    arrows: list[Arrow] = []
    in_flight: dict[tuple, deque[Arrow]] = {}
    before: Counter = Counter()
    for step, drawing in enumerate(drawings):
        messages = drawing.get("messages") or []
        now = Counter(_message_key(m) for m in messages)
        for key, count in (before - now).items():  # delivered (or dropped) by this step's action, oldest first
            for _ in range(count):
                in_flight[key].popleft().delivered = step
        for message in messages:
            key = _message_key(message)
            queue = in_flight.setdefault(key, deque())
            if len(queue) < now[key]:  # one more of these than before: sent by this step's action
                nth = sum(a.sent == step and a.src == message["src"] for a in arrows)
                arrow = Arrow(message["src"], message["dst"], message["label"], message["text"], step, nth=nth)
                queue.append(arrow)
                arrows.append(arrow)
            for arrow in queue:
                arrow.stale = message.get("stale", "")
        exchanged = exchange_arrow(drawing, actions[step], step) if actions else None
        if exchanged is not None:
            arrows.append(exchanged)
        before = now
    if not arrows:
        return None
    lanes = sorted({a.src for a in arrows} | {a.dst for a in arrows}, key=_lane_order)
    return Timeline(lanes, sorted(arrows, key=lambda a: (a.sent, _lane_order(a.src))), len(drawings) - 1)
