"""How `harness explore` draws a kip642 state: a quorum (template views/quorum.html) with each server's
role, epoch and log, the VoterAssignment entries set apart from the records."""

from __future__ import annotations

from harness.itf import IdSet, OptId
from harness.symmetry import unnamed_ids
from specs.kip642 import spec
from specs.kip642.logic import target_of, voters_of
from specs.kip642.state import CANDIDATE, KIND, LEADER, LEADER_CHANGE, ROLE, VOTER_ASSIGNMENT, Kip642Config, State


@spec.protocol_view
def drawn(cfg: Kip642Config, s: State) -> dict:
    """The state as `harness explore` draws a quorum (template views/quorum.html): the voters, each
    server's role and epoch, and its log with the VoterAssignment entries set apart from the records; the
    rules that are exchanges, for the message timeline."""
    def show_set(m: int) -> str:
        return IdSet().show(m)

    servers = []
    for i, v in enumerate(s.servers, 1):
        log, entries = [], []
        for offset, e in enumerate(v.log):
            kind = KIND.show(e.kind)
            if e.kind == VOTER_ASSIGNMENT:
                text = f"voters {show_set(e.voters)}" + (f", target {show_set(e.target)}" if e.target else "")
                entries.append(f"offset {offset}, epoch {e.epoch}: {text}" + (" (committed)" if offset < v.hwm else ""))
                log.append({"epoch": e.epoch, "label": "V", "css": "config", "text": text})
            else:
                log.append({"epoch": e.epoch, "label": "L" if e.kind == LEADER_CHANGE else e.epoch, "text": kind.lower()})
        known = [("voted for", OptId().show(v.voted_for)), ("voters (its log)", show_set(voters_of(v.log))),
                 ("target (its log)", show_set(target_of(v.log)) if target_of(v.log) else "none")]
        if v.role == CANDIDATE:
            known.append(("votes", show_set(v.votes)))
        if v.role == LEADER:
            known.append(("fetch offsets", ", ".join(f"{f}:{o}" for f, o in enumerate(v.fetched, 1))))
        if s.disk_lost >> i & 1:
            known.append(("disk", "lost (restarted with an empty log)"))
        servers.append({"id": i, "role": ROLE.show(v.role), "epoch": v.epoch, "log": log, "known": known,
                        "marks": [("HWM", v.hwm, v.hwm), ("LEO", len(v.log), len(v.log))], "config_entries": entries})
    summary = [("voters (committed log)", show_set(voters_of(s.committed))),
               ("target (committed log)", show_set(target_of(s.committed)) if target_of(s.committed) else "none"),
               ("leader of each epoch", ", ".join(f"{e}:{OptId().show(x)}" for e, x in enumerate(s.leaders, 1)) or "-")]
    history = [("committed", ", ".join(f"{KIND.show(e.kind).lower()}@{e.epoch}" for e in s.committed) or "-"),
               ("commit epoch", str(s.commit_epoch)), ("committed overwritten", str(s.committed_overwritten)),
               ("two leaders in an epoch", str(s.two_leaders_in_an_epoch)),
               ("budget", ", ".join(f"{k} {n}" for k, n in s.budget._asdict().items()))]
    return {"kind": "quorum", "summary": summary, "servers": servers, "history": history, "exchanges": EXCHANGES}


# The rules that are a whole request and its answer in one step, for the explorer's message timeline: the
# parameters naming the sender and the receiver of the request.
EXCHANGES = {"fetch": {"src": "follower", "dst": "leader", "lane": "server", "label": "Fetch"},
             "handle_vote_request": {"src": "candidate", "dst": "voter", "lane": "server", "label": "Vote"},
             "stand_against_nonvoter": {"src": "candidate", "dst": "voter", "lane": "server", "label": "Vote"}}


def interchangeable(cfg: Kip642Config) -> list[tuple[int, ...]]:
    """Symmetry: the servers the config names nowhere (no initial voter, leader or target) behave alike."""
    return unnamed_ids(cfg.servers, cfg.voters, [cfg.leader], *cfg.targets)


spec.symmetry(interchangeable)
