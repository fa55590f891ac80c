"""The faults: a server crashes and restarts, or restarts without its log (a lost disk). Each is bounded by
its budget and, with `max_disruptions`, by the joint limit shared with adversarial election timeouts."""

from __future__ import annotations

from specs.kip642 import spec
from specs.kip642.logic import may_disrupt, servers, set_server
from specs.kip642.state import FOLLOWER, Server


@spec.rule(server=servers, precondition=lambda cfg, s: s.budget.crashes > 0 and may_disrupt(cfg, s),
           applies=lambda cfg: cfg.max_crashes > 0)
def crash_restart(cfg, s, server):
    """Fault: a server crashes and restarts, losing its volatile state [Ongaro's dissertation, §3.8; KIP-642,
    Bootstrapping Procedure, step 1].

    Who acts: the environment, on server `server`.
    Enabled when: crashes are left in the budget (and the joint limit allows a disruption), and the server
    has volatile state to lose: a role other than follower, votes or fetch offsets.
    Next: it is a follower with no votes and no fetch offsets; its log, epoch, vote and HWM stay, and its
    voter set is read back from its log."""
    b = s.servers[server - 1]
    if b.role == FOLLOWER and not b.votes and not any(b.fetched):
        return None  # nothing volatile to lose
    new = b._replace(role=FOLLOWER, votes=0, fetched=(0,) * cfg.servers)
    return s._replace(servers=set_server(s, server, new), budget=s.budget._replace(crashes=s.budget.crashes - 1))


@spec.rule(server=servers, precondition=lambda cfg, s: s.budget.disk_losses > 0 and may_disrupt(cfg, s),
           applies=lambda cfg: cfg.max_disk_losses > 0)
def restart_without_log(cfg, s, server):
    """Fault: a server restarts with an empty disk and, with a new directory id, is no longer the voter it
    was [KIP-853; Ongaro's dissertation, §3.8].

    Who acts: the environment, on server `server`. Raft assumes stable storage (§3.8); KIP-853 gives such a
    server a new directory id so that it cannot rejoin as the voter it was.
    Enabled when: disk losses are left in the budget (and the joint limit allows a disruption), and the
    server has something to lose.
    Next: it has lost its log, its HWM and the quorum-state file with its epoch and vote: a follower of
    epoch 0 that refetches the log from a leader. It is in `disk_lost`: from then on it neither stands nor
    votes, and a leader does not count its fetches toward the HWM (re-adding it as a new voter is not
    modelled)."""
    b = s.servers[server - 1]
    new = Server(epoch=0, voted_for=0, role=FOLLOWER, log=(), hwm=0, votes=0, fetched=(0,) * cfg.servers)
    if b == new:
        return None
    return s._replace(servers=set_server(s, server, new), disk_lost=s.disk_lost | 1 << server,
                      budget=s.budget._replace(disk_losses=s.budget.disk_losses - 1))
