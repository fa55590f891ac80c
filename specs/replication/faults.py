"""The faults, each within its budget (the TLA+ limits, and the joint `max_disruptions`): clean and unclean
shutdowns (v3.5's UncleanShutdown and CleanShutdown; kip966's DataLossShutdown and NoDataLossShutdown), in
which the controller detects the broker gone, and the controller fencing a broker at will (FenceBroker, the
TLA+ stand-in for missed heartbeats)."""

from __future__ import annotations

from harness.bitset import size
from specs.replication import spec
from specs.replication.logic import (brokers, drop_fetch_sessions, fail_pending_writes, handle_broker_fenced,
                                     leader_choices, may_disrupt, put)
from specs.replication.speed import fenceable, stopping
from specs.replication.state import (BLANK_PEER, EMPTY_DATA, FENCED, INT_MAX, LEADER, NIL, NO_PENDING_AP, NO_ROLE,
                                     OFFLINE_CLEAN, OFFLINE_DIRTY, UNFENCED, BrokerState, State)


def shutdown(cfg, s: State, b: int, leader: int, status: int, kept_epoch: int = 0) -> dict | None:
    """What both shutdowns share: the broker stops, its fetch sessions go, the replica forgets its role,
    followers and pending requests, fails pending writes if it led, and the controller fences it."""
    fenced = handle_broker_fenced(cfg, s, b, leader)
    if fenced is None:
        return None
    changes = {}
    if s.partition_status[b - 1] == LEADER and s.partition_data[b - 1].hwm < s.partition_data[b - 1].leo:
        changes.update(fail_pending_writes(s, b))
    changes.update(drop_fetch_sessions(cfg, s, b))
    changes.update(fenced)
    changes.update(
        broker_state=put(s.broker_state, b, BrokerState(status, kept_epoch, 0, False)),
        partition_status=put(s.partition_status, b, NO_ROLE),
        partition_replica_state=put(s.partition_replica_state, b, (BLANK_PEER,) * cfg.broker_count),
        partition_pending_ap=put(s.partition_pending_ap, b, NO_PENDING_AP),
        con_broker_reg=put(s.con_broker_reg, b, s.con_broker_reg[b - 1]._replace(status=FENCED)),
        aux_flo=put(s.aux_flo, b, INT_MAX))
    return changes


def data_loss_shutdown(cfg, s: State, b: int, leader: int) -> State | None:
    """What UncleanShutdown (v3.5) and DataLossShutdown (kip966) share: the broker stops and loses its log."""
    changes = shutdown(cfg, s, b, leader, OFFLINE_DIRTY)
    if changes is None:
        return None
    changes["partition_data"] = put(s.partition_data, b, EMPTY_DATA)
    changes["partition_leso"] = put(s.partition_leso, b, NIL)
    changes["aux_ctrs"] = s.aux_ctrs._replace(unclean_shutdown_ctr=s.aux_ctrs.unclean_shutdown_ctr + 1)
    return s._replace(**changes)


def running(s: State, b: int) -> bool:
    return s.broker_state[b - 1].status not in (OFFLINE_CLEAN, OFFLINE_DIRTY)


def unclean_budget(cfg, s: State) -> bool:
    return s.aux_ctrs.unclean_shutdown_ctr < cfg.unclean_shutdown_limit and may_disrupt(cfg, s)


def clean_budget(cfg, s: State) -> bool:
    return s.aux_ctrs.clean_shutdown_ctr < cfg.clean_shutdown_limit and may_disrupt(cfg, s)


@spec.rule(b=brokers, leader=leader_choices, precondition=unclean_budget, candidates=stopping,
           applies=lambda cfg: cfg.unclean_shutdown_limit > 0 and not cfg.kip966)
def UncleanShutdown(cfg, s: State, b, leader):
    """Fault: a broker stops and loses its whole log (v3.5).

    Who acts: broker b (the TLA+ WHO: Broker); the controller detects it in the same step.
    Enabled when: b is up and the unclean shutdown budget (and the joint one) lasts; with
    AvoidLastReplicaStanding, b is not the ISR's last member.
    Next: b is OFFLINE_DIRTY with an empty log; its fetch sessions are gone; its replica forgets its role,
    followers and pending request, and fails pending writes if it led; the controller fences it (electing
    `leader` if it must choose one)."""
    if not running(s, b):
        return None
    isr = s.con_partition_metadata.isr
    if cfg.avoid_last_replica_standing and isr >> b & 1 and size(isr) == 1:
        return None
    return data_loss_shutdown(cfg, s, b, leader)


@spec.rule(b=brokers, leader=leader_choices, precondition=clean_budget, candidates=stopping,
           applies=lambda cfg: cfg.clean_shutdown_limit > 0 and not cfg.kip966)
def CleanShutdown(cfg, s: State, b, leader):
    """Fault: a broker stops and keeps its log (v3.5).

    Who acts: broker b (the TLA+ WHO: Broker); the controller detects it in the same step.
    Enabled when: b is up and the clean shutdown budget (and the joint one) lasts.
    Next: b is OFFLINE_CLEAN; its fetch sessions are gone; its replica forgets its role, followers and
    pending request, and fails pending writes if it led; the controller fences it (electing `leader` if
    it must choose one)."""
    if not running(s, b):
        return None
    changes = shutdown(cfg, s, b, leader, OFFLINE_CLEAN)
    if changes is None:
        return None
    changes["aux_ctrs"] = s.aux_ctrs._replace(clean_shutdown_ctr=s.aux_ctrs.clean_shutdown_ctr + 1)
    return s._replace(**changes)


@spec.rule(b=brokers, leader=leader_choices, precondition=unclean_budget, candidates=stopping,
           applies=lambda cfg: cfg.unclean_shutdown_limit > 0 and cfg.kip966)
def DataLossShutdown(cfg, s: State, b, leader):
    """Fault: a broker stops and loses its whole log and the broker epoch it would have kept (kip966).

    Who acts: broker b; the controller detects it in the same step.
    Enabled when: b is up and the data-loss shutdown budget (and the joint one) lasts; any ISR member may
    stop so.
    Next: as UncleanShutdown: b is OFFLINE_DIRTY with an empty log, and the controller fences it (electing
    `leader` if it must choose one)."""
    if not running(s, b):
        return None
    return data_loss_shutdown(cfg, s, b, leader)


@spec.rule(b=brokers, clean=lambda cfg: (0, 1), leader=leader_choices, precondition=clean_budget,
           applies=lambda cfg: cfg.clean_shutdown_limit > 0 and cfg.kip966)
def NoDataLossShutdown(cfg, s: State, b, clean, leader):
    """Fault: a broker stops with its log intact (kip966).

    Who acts: broker b; the controller detects it in the same step.
    Enabled when: b is up and the no-data-loss shutdown budget (and the joint one) lasts.
    Next: b is OFFLINE_CLEAN; a clean shutdown (`clean` 1) writes its broker epoch to disk for the next
    registration, an unclean one without data loss does not; the controller fences it (electing `leader`
    if it must choose one)."""
    if not running(s, b):
        return None
    changes = shutdown(cfg, s, b, leader, OFFLINE_CLEAN, s.broker_state[b - 1].broker_epoch if clean else 0)
    if changes is None:
        return None
    changes["aux_ctrs"] = s.aux_ctrs._replace(clean_shutdown_ctr=s.aux_ctrs.clean_shutdown_ctr + 1)
    return s._replace(**changes)


@spec.rule(b=brokers, leader=leader_choices, applies=lambda cfg: cfg.fence_broker_limit > 0, candidates=fenceable,
           precondition=lambda cfg, s: s.aux_ctrs.fence_broker_ctr < cfg.fence_broker_limit and may_disrupt(cfg, s))
def FenceBroker(cfg, s: State, b, leader):
    """Fault: the controller fences a broker, as on missed heartbeats.

    Who acts: the controller, at any time here (the TLA+ WHO: Controller).
    Enabled when: b is unfenced and the fencing budget (and the joint one) lasts.
    Next: b is FENCED, out of the ISR (v3.5: which keeps at least one member; kip966: which may empty, the
    ELR taking up the slack) and the leadership (electing `leader` if the controller must choose one)."""
    if s.aux_ctrs.fence_broker_ctr >= cfg.fence_broker_limit or s.con_broker_reg[b - 1].status != UNFENCED:
        return None
    changes = handle_broker_fenced(cfg, s, b, leader)
    if changes is None:
        return None
    return s._replace(con_broker_reg=put(s.con_broker_reg, b, s.con_broker_reg[b - 1]._replace(status=FENCED)),
                      aux_ctrs=s.aux_ctrs._replace(fence_broker_ctr=s.aux_ctrs.fence_broker_ctr + 1), **changes)
