"""The kraft model's faults: a broker shuts down cleanly, loses power, or stops for good; the controller
takes it out of the ISR and leadership (`specs.kraft.controller.remove_broker`). The restarts after
them are the broker's own steps (`specs.kraft.brokers`); fencing is the controller's (`fence`).

Citations as in `specs.kraft`: [kafka-tlaplus v3.5 §2.x], and KIP-966 for the ELR.
"""

from __future__ import annotations

from specs.kraft import spec
from specs.kraft.controller import remove_broker
from specs.kraft.logic import commit_partition, fresh_broker, running, with_broker
from specs.kraft.speed import disruption_room
from specs.kraft.state import CRASHED, GONE, OFFLINE, PICK, State, brokers, leader_choices


@spec.rule(broker=brokers, new_leader=leader_choices, format=PICK,
           precondition=lambda cfg, s: disruption_room(cfg, s).faults, applies=lambda cfg: cfg.max_faults > 0)
def clean_shutdown(cfg, s, broker, new_leader):
    """Broker and controller: `broker` shuts down cleanly. TLA+: NoDataLossShutdown.

    Who acts: the broker (stopped by its operator: a controlled shutdown), then the controller.
    Enabled when: the broker is running and the fault budget allows.
    Next: controlled shutdown takes it out of the ISR (and leadership) first; its log is flushed
    (OFFLINE).
    """
    return shut_down(cfg, s, broker, new_leader, OFFLINE, "faults")


@spec.rule(broker=brokers, new_leader=leader_choices, format=PICK,
           precondition=lambda cfg, s: disruption_room(cfg, s).unclean_shutdowns,
           applies=lambda cfg: cfg.max_unclean_shutdowns > 0)
def unclean_shutdown(cfg, s, broker, new_leader):
    """Broker: `broker` loses power; the controller fences it. TLA+: DataLossShutdown.

    Who acts: the environment (a power loss at the broker's machine), then the controller.
    Enabled when: the broker is running and the unclean-shutdown budget allows.
    Next: it leaves the ISR (the ELR may keep it until it re-registers, KIP-966) and is CRASHED:
    what it had not flushed is lost at restart.
    """
    return shut_down(cfg, s, broker, new_leader, CRASHED, "unclean_shutdowns")


@spec.rule(broker=brokers, new_leader=leader_choices, format=PICK,
           precondition=lambda cfg, s: disruption_room(cfg, s).permanent_failures,
           applies=lambda cfg: cfg.max_permanent_failures > 0)
def fail_permanently(cfg, s, broker, new_leader):
    """Broker: `broker` stops for good (its machine is lost); the controller fences it when its
    heartbeats stop [kafka-tlaplus v3.5 §2.8]. No TLA+ counterpart (its faults all heal).

    Who acts: the environment (the broker's machine is lost), then the controller.
    Enabled when: the broker is running and fewer than `max_permanent_failures` are gone.
    Next: it leaves the ISR and leadership as in a fencing, and is GONE: no rule restarts it.
    """
    return shut_down(cfg, s, broker, new_leader, GONE, None)


def shut_down(cfg, s: State, broker: int, new_leader: int, status: int, budget: str | None) -> State | None:
    """A running broker stops (GONE, OFFLINE or CRASHED): it leaves the ISR and leadership, its process
    state is gone, its log stays on disk; one unit of `budget` is spent (a permanent failure is counted
    by the GONE brokers instead)."""
    b = s.brokers[broker - 1]
    if not running(b):
        return None
    new = remove_broker(cfg, s, broker, new_leader)
    if new is None:
        return None
    down = fresh_broker(cfg.brokers, status, b.epoch, b.log, b.hwm)
    spent = {} if budget is None else {"budget": s.budget._replace(**{budget: getattr(s.budget, budget) - 1})}
    return commit_partition(cfg, s, s.partition, new, brokers=with_broker(s, broker, down), **spent)
