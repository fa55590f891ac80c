"""Speed helpers for specs and engines, kept apart from the authoring API (harness.model).

A spec written plainly (`state._replace(field=value)`, no caches) is correct and fast enough for most
models; reach for these only where a profile of a real search shows the cost, and keep their uses in one
marked section of the spec. Each says when it pays.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from typing import Any, Callable


def memoized(fn: Callable) -> Callable:
    """Cache a pure function of immutable state parts (say, a controller's partition changes).
    Many states share the same parts, so a search computes each result once per distinct input
    rather than once per state. Bounded, so memory stays flat on long runs.
    When: the function is pure, costs microseconds, and a profile shows most calls repeat an input."""
    return functools.lru_cache(maxsize=1 << 16)(fn)


def per_state(fn: Callable) -> Callable:
    """Cache fn(x), or fn(cfg, x), for the last arguments it was called with (by identity). `successors`
    asks every rule about one state in turn, so a fact derived from a part of that state (which brokers
    are unfenced), or from the state and its config (which disruptions its budgets allow), is computed
    once per state instead of once per rule. The cache holds the last arguments, so their ids cannot be
    reused by other objects while it does.
    When: several rules' preconditions derive the same fact from the same part of a state."""
    if fn.__code__.co_argcount == 2:
        return _per_state_of_config(fn)
    last_arg: Any = object()
    last_result: Any = None

    def cached(x):
        nonlocal last_arg, last_result
        if x is not last_arg:
            last_result = fn(x)
            last_arg = x
        return last_result

    return functools.update_wrapper(cached, fn)


def _per_state_of_config(fn: Callable) -> Callable:
    last_cfg: Any = object()
    last_arg: Any = object()
    last_result: Any = None

    def cached(cfg, x):
        nonlocal last_cfg, last_arg, last_result
        if x is not last_arg or cfg is not last_cfg:
            last_result = fn(cfg, x)
            last_cfg, last_arg = cfg, x
        return last_result

    return functools.update_wrapper(cached, fn)


@contextlib.contextmanager
def cycle_collector_paused(keeps_what_it_built: bool = False):
    """Pause CPython's cycle collector for a search loop. States are acyclic tuples of ints, so it
    can free nothing there, yet it re-traverses the growing set of live states: about 30% of BFS
    time at kraft ci (docs/PERFORMANCE.md). Reference counting still frees everything.
    `keeps_what_it_built`: the loop returns what it built (a state graph) to its caller. Everything
    allocated meanwhile is still in the youngest generation, so the first collection after the pause
    would traverse all of it (16 s after kip642 ci's graph); `gc.freeze()` moves it out of the
    collector's sight instead. The cost: a reference cycle among those objects is freed only at exit.
    When: always, around an engine's search loop (engines use it; specs never need it)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keeps_what_it_built:
            gc.freeze()
        if was_enabled:
            gc.enable()


def fast_replace(*classes: type) -> None:
    """Give NamedTuple state classes a `_replace` about twice as fast as the stdlib's (same result);
    rules call `_replace` on every step, so it shows in states/s.
    When: once per spec, on its state classes; rules keep writing `_replace(field=...)`."""
    for cls in classes:
        cls._replace = _fast_replace(cls)


def _fast_replace(cls: type) -> Callable:
    index = {name: i for i, name in enumerate(cls._fields)}
    new = tuple.__new__

    # `self` positional-only: a keyword is then matched by identity against no parameter name, where
    # the defaults `_index=..., _new=...` made CPython compare it as a string with each of them.
    def _replace(self, /, **changes):
        values = list(self)
        for name in changes:
            values[index[name]] = changes[name]
        return new(type(self), values)

    return _replace


def setter(cls: type, *fields: str) -> Callable:
    """A positional `_replace` of adjacent fields for the hottest updates of a spec:
    `set_log_and_hwm = setter(Broker, "log", "hwm")`, then `set_log_and_hwm(b, log, hwm)`. It splices
    the tuple, about twice as fast as a keyword `_replace` (no keyword dict, no name lookup per
    call): 0.3 against 0.6-1.0 us.
    When: only for the few updates made on nearly every step of a measured hot rule."""
    positions = [cls._fields.index(f) for f in fields]
    first, end = positions[0], positions[0] + len(positions)
    if positions != list(range(first, end)):
        raise ValueError(f"setter needs adjacent fields of {cls.__name__}, in order: {', '.join(fields)}")
    new = tuple.__new__

    def set_adjacent(self, *values):
        return new(cls, self[:first] + values + self[end:])

    return set_adjacent
