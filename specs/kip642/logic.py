"""The kip642 model's protocol logic that its rules share (no rules here): parameter domains, what a
server's log says (its voter set, its pending target), vote granting and counting, and the state updates
several rules make (a server replaced, an append, taking the lead)."""

from __future__ import annotations

from harness.bitset import mask
from specs.kip642.state import LEADER, LEADER_CHANGE, VOTER_ASSIGNMENT, Entry, Server, State


# ------------------------------------------------------------------------------ parameter domains

def servers(cfg):
    return range(1, cfg.servers + 1)


def targets(cfg):
    return range(len(cfg.targets))


def voter_list(cfg, target: int) -> str:
    """How a `target` parameter reads in traces: the voter list it names, `[1,2,4]`."""
    return "[" + ",".join(map(str, cfg.targets[target])) + "]"


# ------------------------------------------------------------------------- a log's voter sets

def voters_of(log: tuple) -> int:
    """CurrentVoters of the latest VoterAssignment in the log (committed or not)."""
    for e in reversed(log):
        if e.kind == VOTER_ASSIGNMENT:
            return e.voters
    return 0


def target_of(log: tuple) -> int:
    """TargetVoters of the latest VoterAssignment in the log (0 = null: no reassignment pending)."""
    for e in reversed(log):
        if e.kind == VOTER_ASSIGNMENT:
            return e.target
    return 0


def previous_voters(log: tuple) -> int:
    """CurrentVoters of the VoterAssignment before the latest (the latest's if there is one only)."""
    seen = 0
    for e in reversed(log):
        if e.kind == VOTER_ASSIGNMENT:
            seen += 1
            if seen == 2:
                return e.voters
    return voters_of(log)


def is_majority(votes: int, voters: int) -> bool:
    return 2 * (votes & voters).bit_count() > voters.bit_count()


def last_epoch(log: tuple) -> int:
    return log[-1].epoch if log else 0


# ------------------------------------------------------------------------------------ elections

def grants_vote(cfg, s: State, v: Server, voter: int, candidate: int, log: tuple) -> bool:
    """Server v (`voter`, already in the candidate's epoch) grants its vote to `candidate`, whose log is
    `log`: v has not restarted without its log (it has lost the votes it cast and the epoch it promised;
    KIP-853 gives it a new directory id, so it is no longer the voter it was), has not voted for another server in that epoch (Ongaro's
    dissertation, §3.4), and the candidate's log is at least as up to date (§3.6.1). Under
    `votes=kip642` both must also be voters in v's own log's voter set (observers do not vote, voters
    reject non-voters: KIP-642, Reassignment Algorithm, the note after step 6); under `votes=kip853`
    any server votes, for any candidate (KIP-853, Vote handling; Ongaro's dissertation, §4.1)."""
    if s.disk_lost >> voter & 1 and not cfg.mutated.votes_without_log:
        return False
    if cfg.votes == "kip642":
        # votes_without_log: with no voter set in its log, it falls back to `quorum.voters` (KIP-642,
        # Quorum Bootstrapping, step 5) and votes as the voter it was.
        voters = voters_of(v.log) or (mask(cfg.voters) if cfg.mutated.votes_without_log else 0)
        if not (voters >> voter & 1 and voters >> candidate & 1):
            return False
    return v.voted_for in (0, candidate) and (last_epoch(v.log), len(v.log)) <= (last_epoch(log), len(log))


def election_config(cfg, log: tuple) -> int:
    """The voter set a candidate whose log is `log` counts its votes against: its log's latest."""
    return previous_voters(log) if cfg.mutated.votes_against_old_config else voters_of(log)


def lead(cfg, s: State, candidate: int, c: Server) -> State:
    """Candidate `c` (server `candidate`, with its votes) takes the lead of its epoch: it appends a
    LeaderChange record and tracks fetch offsets; the `leaders` history records it."""
    log = c.log + (Entry(epoch=c.epoch, kind=LEADER_CHANGE, voters=0, target=0),)
    fetched = tuple(len(log) if i == candidate else 0 for i in servers(cfg))
    leaders = s.leaders + (0,) * (c.epoch - len(s.leaders))  # the history grows with the epochs
    previous = leaders[c.epoch - 1]  # who led this epoch before
    srv = set_server(s, candidate, c._replace(role=LEADER, log=log, fetched=fetched))
    return s._replace(servers=srv, leaders=leaders[:c.epoch - 1] + (candidate,) + leaders[c.epoch:],
                      two_leaders_in_an_epoch=s.two_leaders_in_an_epoch or previous not in (0, candidate))


def may_disrupt(cfg, s: State) -> bool:
    """The joint limit on adversarial timeouts, crashes and disk losses (if the config sets one) leaves room for
    another."""
    b = s.budget
    spent = cfg.max_elections - b.elections + cfg.max_crashes - b.crashes + cfg.max_disk_losses - b.disk_losses
    return cfg.max_disruptions < 0 or spent < cfg.max_disruptions


# ------------------------------------------------------------------------- a leader and its log

def uncommitted_change(b: Server) -> bool:
    """A VoterAssignment beyond the server's HWM."""
    return any(e.kind == VOTER_ASSIGNMENT for e in b.log[b.hwm:])


def committed_in_epoch(b: Server) -> bool:
    """The server has committed an entry of its own epoch."""
    return any(e.epoch == b.epoch for e in b.log[:b.hwm])


def leading(s: State, leader: int) -> Server | None:
    """Server `leader`, if it is a leader (of any epoch)."""
    b = s.servers[leader - 1]
    return b if b.role == LEADER else None


def set_server(s: State, i: int, new: Server) -> tuple:
    """The servers with server i replaced by `new`."""
    return s.servers[:i - 1] + (new,) + s.servers[i:]


def append(s: State, leader: int, entry: Entry, **changes) -> State:
    """The leader appends `entry` and records its own fetch offset; `changes` update other fields of the state."""
    b = s.servers[leader - 1]
    log = b.log + (entry,)
    fetched = b.fetched[:leader - 1] + (len(log),) + b.fetched[leader:]
    return s._replace(servers=set_server(s, leader, b._replace(log=log, fetched=fetched)), **changes)


# ------------------------------------------------------------------------------------- liveness

def reassignment_done(cfg, s: State) -> bool:
    """No server's log has a pending TargetVoters."""
    return all(not target_of(b.log) for b in s.servers)


def reassignment_completed(cfg, s: State) -> bool:
    """The committed log has no pending TargetVoters, no server that remains a voter (in the committed
    voter set) has one in its own log, and some server leads. A removed voter may never hear of the
    completion (once removed it is not fetched for and may be fenced by a higher epoch), so it does not count."""
    if target_of(s.committed) or not any(b.role == LEADER for b in s.servers):
        return False
    remaining = voters_of(s.committed)
    return all(not target_of(b.log) for i, b in enumerate(s.servers, 1) if remaining >> i & 1)

