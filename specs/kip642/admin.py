"""The admin's rules: the client that submits a reassignment (AlterPartitionReassignments, KIP-642) or
cancels it. The leader handles each request by appending a VoterAssignment; the admin's budgets bound
how often it asks."""

from __future__ import annotations

from harness.bitset import mask
from specs.kip642 import spec
from specs.kip642.logic import append, leading, servers, target_of, targets, uncommitted_change, voter_list, voters_of
from specs.kip642.state import VOTER_ASSIGNMENT, Entry


@spec.rule(leader=servers, target=targets, precondition=lambda cfg, s: s.budget.reassignments > 0,
           format={"target": voter_list})
def alter_partition_reassignments(cfg, s, leader, target):
    """Admin: requests the voter set `target`; the leader appends VoterAssignment(CurrentVoters, TargetVoters =
    target) [KIP-642, AlterPartitionReassignments Request Handling, and Reassignment Algorithm, step 1].

    Who acts: the admin, with an AlterPartitionReassignments request; server `leader` handles it.
    Enabled when: requests are left in the budget, `leader` leads (else NOT_LEADER_FOR_PARTITION), `target`
    differs from its log's current voters (a request for the current voters is `cancel_reassignment`), and
    no voter change is uncommitted in its log (one voter change at a time).
    Next: the leader's log ends with VoterAssignment(CurrentVoters, TargetVoters = target)."""
    b = leading(s, leader)
    if b is None:
        return None  # NOT_LEADER_FOR_PARTITION
    current, wanted = voters_of(b.log), mask(cfg.targets[target])
    if wanted == current:
        return None  # a request for the current voters is a cancellation: cancel_reassignment
    if uncommitted_change(b) and not cfg.mutated.two_uncommitted_changes:
        return None  # one voter change at a time
    entry = Entry(epoch=b.epoch, kind=VOTER_ASSIGNMENT, voters=current, target=wanted)
    return append(s, leader, entry, budget=s.budget._replace(reassignments=s.budget.reassignments - 1))


@spec.rule(leader=servers, precondition=lambda cfg, s: s.budget.cancels > 0, applies=lambda cfg: cfg.max_cancels > 0)
def cancel_reassignment(cfg, s, leader):
    """Admin: cancels the pending reassignment; the leader appends VoterAssignment(CurrentVoters, null)
    [KIP-642, AlterPartitionReassignments: `Replicas` null, or the current voters resubmitted].

    Who acts: the admin, with a cancellation; server `leader` handles it.
    Enabled when: cancellations are left in the budget, `leader` leads, its log has a reassignment pending
    and no voter change uncommitted.
    Next: the leader's log ends with VoterAssignment(CurrentVoters, null), which leaves the quorum with the
    current voters."""
    b = leading(s, leader)
    if b is None or not target_of(b.log) or uncommitted_change(b):
        return None
    entry = Entry(epoch=b.epoch, kind=VOTER_ASSIGNMENT, voters=voters_of(b.log), target=0)
    return append(s, leader, entry, budget=s.budget._replace(cancels=s.budget.cancels - 1))
