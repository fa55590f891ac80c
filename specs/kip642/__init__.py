"""KIP-642 dynamic quorum reassignment on pull-based Raft (KIP-595).

Sources: KIP-642 (Dynamic quorum reassignment: Quorum Change Protocol, Reassignment Algorithm,
Bootstrapping Procedure, AlterPartitionReassignments Request Handling), KIP-595 (A Raft Protocol for the
Metadata Quorum: Vote, Fetch, EndQuorumEpoch, LeaderChangeMessage), KIP-853 (KRaft Controller Membership
Changes: Vote handling, the directory id), Ongaro's dissertation "Consensus: Bridging Theory and Practice"
(chapters 3 and 4, and the errata of chapter 4) and Kafka's `QuorumState` (the Resigned state).

Who acts: the leader (appends VoterAssignment records, single-member steps, completion,
resignation, commit), candidates and voters (elections), followers and observers (fetch).
Servers 1..N. The voter set a server uses is the `CurrentVoters` of the latest VoterAssignment in
its own log, committed or not: followers act on a voter set as soon as it is appended and revert
when it is truncated (KIP-642, Reassignment Algorithm, step 4 and the note after step 6; the
same rule as Ongaro's dissertation, §4.1).

Abstractions (docs/models/kip642.md):
* Messages are atomic request/response steps: a vote (VoteRequest + response), a fetch (Fetch +
  response, with divergence truncation), EndQuorumEpoch as the leader's resignation. What is lost
  is only message delay and loss between the two halves, which the properties do not depend on:
  a delayed response is equivalent to a later atomic step, a lost one to no step.
* A new leader appends a LeaderChange record (KIP-595); a voter change waits until the leader has
  committed an entry of its own epoch (the fix of the single-server change bug Diego Ongaro
  reported on raft-dev in 2015, listed in the errata of his dissertation, chapter 4).
* Data records have no values: an entry is (epoch, kind, voters, target).
* Crashes lose volatile state only (role, votes received, fetch offsets); log, epoch, vote and the
  HWM a server knows stay.
* Elections: adversarial timeouts (a server times out while a leader serves, or beside another
  candidate: split votes, disruptions) are a bounded perturbation (`become_candidate`,
  `stand_against_nonvoter`, `max_elections`). Once no server leads the highest epoch and the elections
  under way are over, `win_election` (fair, unbudgeted) is one randomized timeout that wins: Raft's
  liveness assumption (Ongaro's dissertation, §3.4, §3.10). The state space stays finite because a
  leader of the highest epoch only stops leading through a budgeted event or a resignation.
* `fetched` (a leader's view of fetch offsets) is cleared when a server stops leading: it is read
  only while leading, and keeping stale offsets multiplied the state space (tiny: 101,169 -> 11,411).
* Offsets count from 0, as in Kafka: a server's HWM is the offset of its first uncommitted entry.
* Who votes is the variant `votes`: KIP-853's relaxed Vote handling (default), or KIP-642's own rule,
  under which ReassignmentCompletes fails (`literal-votes`, docs/models/kip642.md).
* A server that restarts without its log is no longer the voter it was (KIP-853's new directory id):
  it neither stands nor votes, and its fetches do not count toward a commit.
"""

from __future__ import annotations

from harness.bitset import mask
from harness.model import Spec
from specs.kip642.logic import reassignment_completed, reassignment_done, servers
from specs.kip642.presets import EXPECTED, OLD_CONFIG_SCENARIO, ONGARO_SCENARIO, PRESETS
from specs.kip642.state import FOLLOWER, LEADER, VOTER_ASSIGNMENT, Budget, Entry, Kip642Config, Server, State

spec = Spec("kip642", Kip642Config, State, doc=__doc__, presets=PRESETS, expected=EXPECTED, deadlock=False,
            mutation_preset="ci",
            guides={"change_before_epoch_commit": ONGARO_SCENARIO, "votes_against_old_config": OLD_CONFIG_SCENARIO})
spec.mutation("change_before_epoch_commit", rule="leader_step", caught_at="ongaro",
              removes="the epoch-commit condition: append a voter change before committing an entry of the leader's "
                      "epoch (Ongaro's single-server change bug, raft-dev 2015; dissertation errata, chapter 4)")
spec.mutation("two_uncommitted_changes", rule="leader_step",
              removes="the one-change-at-a-time condition: a voter change while the previous one is uncommitted "
                      "(KIP-642, Reassignment Algorithm, step 4; Ongaro's dissertation, §4.1)")
spec.mutation("votes_without_log", rule="handle_vote_request", caught_at="disk-loss",
              removes="withholding the vote of a server that restarted without its log: with no voter set in its "
                      "log it takes `quorum.voters` (KIP-642, Quorum Bootstrapping, step 5) and votes as if it had "
                      "its log (Ongaro's dissertation, §3.8; KIP-853's directory id exists to stop it)")
spec.mutation("votes_against_old_config", rule="become_leader", caught_at="old-config",
              removes="counting votes against the current configuration: count them against the previous one "
                      "(KIP-642, Reassignment Algorithm, the note after step 6)")

spec.eventually("ReassignmentCompletes", goal=reassignment_completed, trigger=lambda cfg, s: not reassignment_done(cfg, s),
                doc="once some server's log holds a pending TargetVoters, eventually the committed log completes "
                    "it, no server that remains a voter holds one, and some server leads, under weak fairness of "
                    "the fair rules (adversarial timeouts and faults are bounded, so they stop; `win_election` is "
                    "fair: randomized timeouts eventually elect a leader)")
spec.expect_liveness_failure(
    "literal-votes", "ReassignmentCompletes",
    "KIP-642's own vote rule (votes=kip642): a server added by an entry it has not fetched acts as an observer and "
    "does not vote, and voters reject non-voters; after one adversarial timeout no server can win: the old leader's "
    "log has removed 2 from {1,2,3}, 2's log holds {1,2,3}, 3's log still holds {1,2} (KIP-853 relaxes Vote handling "
    "for this)")

spec.expect_liveness_failure(
    "liveness", "ReassignmentCompletes",
    "a quorum that loses a majority of its voters' logs cannot elect a leader: the only voter restarts without its "
    "log and, with a new directory id, no longer counts as the voter it was (KIP-853, KRaft Controller Membership "
    "Changes: the directory id; Raft assumes stable storage, Ongaro's dissertation, §3.8)")


@spec.init
def init(cfg):
    """Epoch 1: `leader` leads, elected by the voters; every server holds the bootstrap VoterAssignment
    (CurrentVoters = `voters`), committed (KIP-642, Bootstrapping Procedure)."""
    boot = Entry(epoch=0, kind=VOTER_ASSIGNMENT, voters=mask(cfg.voters), target=0)

    def server(i: int) -> Server:
        leads = i == cfg.leader
        return Server(epoch=1, voted_for=cfg.leader if i in cfg.voters else 0, role=LEADER if leads else FOLLOWER,
                      log=(boot,), hwm=1, votes=0, fetched=(1 if leads else 0,) * cfg.servers)

    yield State(servers=tuple(server(i) for i in servers(cfg)),
                budget=Budget(reassignments=cfg.max_reassignments, cancels=cfg.max_cancels,
                              elections=cfg.max_elections, writes=cfg.max_writes, crashes=cfg.max_crashes,
                              disk_losses=cfg.max_disk_losses),
                committed=(boot,), commit_epoch=1, committed_overwritten=False, two_leaders_in_an_epoch=False, disk_lost=0,
                leaders=(cfg.leader,))


# The rules, one module per actor: each registers its rules on `spec` as it is imported.
from specs.kip642 import admin, leaders, followers, voters, faults  # noqa: E402  registers the rules

# The order engines try the rules in decides BFS's successor order, first-found states and committed traces:
# it is the order the rules had in one module before the split (leader, follower, election, fault rules).
spec.order_rules("alter_partition_reassignments", "cancel_reassignment", "leader_step", "complete_reassignment",
                 "resign", "client_write", "advance_hwm", "fetch", "become_candidate", "handle_vote_request",
                 "stand_against_nonvoter", "become_leader", "win_election", "crash_restart", "restart_without_log")

from specs.kip642 import speed, view  # noqa: E402  fast_replace on the state classes; the explorer's drawing

MODULES = (admin, leaders, followers, voters, faults, speed, view)  # what importing them registered
