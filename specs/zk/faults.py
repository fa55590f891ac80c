"""The zk model's faults: a controller crash (with or without a zombie), a broker crash, and its restart.

Citations as in `specs.zk`.
"""

from __future__ import annotations

from specs.zk import spec
from specs.zk.logic import brokers, may_disrupt, spend, with_broker
from specs.zk.state import NO_CONTROLLER, NO_LEADER, NONE


@spec.rule(zombie=lambda cfg: range(2 if cfg.max_zombies else 1),
           format={"zombie": lambda cfg, z: "keeps running" if z else "stops"},
           precondition=lambda cfg, s: s.controller.epoch > 0 and may_disrupt(cfg, s, "failovers"),
           applies=lambda cfg: cfg.max_failovers > 0)
def controller_crash(cfg, s, zombie):
    """Environment: the active controller loses its ZooKeeper session (/controller is ephemeral).

    Who acts: the environment (ZooKeeper expires the controller's session).
    Enabled when: the budget allows, at any step of any event.
    Next: no active controller; its requests already sent stay in flight. With `zombie`, the old
    controller keeps running its event until a ZooKeeper write fails (budget `max_zombies`).
    """
    if zombie and (not s.budget.zombies or s.zombie.epoch):
        return None
    costs = {"failovers": 1, "zombies": 1} if zombie else {"failovers": 1}
    return s._replace(controller=NO_CONTROLLER, zombie=s.controller if zombie else s.zombie,
                      budget=spend(s, **costs))


@spec.rule(broker=brokers, precondition=lambda cfg, s: may_disrupt(cfg, s, "broker_crashes"),
           applies=lambda cfg: cfg.max_broker_crashes > 0)
def broker_crash(cfg, s, broker):
    """Environment: a broker crashes; its ZooKeeper registration goes; it keeps its log (flushed).

    Who acts: the environment.
    Enabled when: the broker is live and the budget allows.
    Next: down, with its in-memory state (replica, controller epoch, requests in flight) gone.
    """
    b = s.brokers[broker - 1]
    if not b.alive:
        return None
    down = b._replace(alive=False, ctrl_epoch=0, role=NONE, leader=NO_LEADER, leader_epoch=0, version=0,
                      replicas=0, isr=0, leso=0, follower_leo=(0,) * cfg.brokers, alter=0, inbox=())
    return with_broker(s, broker, down)._replace(budget=spend(s, broker_crashes=1))


@spec.rule(broker=brokers, fair=True, applies=lambda cfg: cfg.max_broker_crashes > 0)
def broker_start(cfg, s, broker):
    """Environment: a crashed broker starts and registers again.

    Who acts: the broker, restarted.
    Enabled when: it is down and the active controller (if any) has seen it fail.
    Next: live, holding its log and no replica until a LeaderAndIsr arrives.
    """
    b = s.brokers[broker - 1]
    if b.alive or s.controller.live >> broker & 1 and s.controller.epoch:
        return None
    return with_broker(s, broker, b._replace(alive=True))
