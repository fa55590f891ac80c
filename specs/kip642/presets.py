"""The kip642 model's presets, the expected failures at them, and the scenarios the corpus replays as
guided searches (`Spec.guides`) to regenerate the deep mutation traces fast."""

PRESETS = {
    "tiny": {"servers": 3, "voters": [1, 2], "targets": [[1, 3]], "max_writes": 0},
    # The leader 1 is replaced: add 3, resign, the next leader (a fair `win_election`) removes 1; one
    # adversarial election timeout and one crash.
    "ci": {"servers": 3, "voters": [1, 2], "targets": [[2, 3]], "max_writes": 0, "max_crashes": 1},
    # `tiny` under KIP-642's own vote rule, where ReassignmentCompletes fails (an expected failure).
    "literal-votes": {"servers": 3, "voters": [1, 2], "targets": [[1, 3]], "max_writes": 0, "votes": "kip642"},
    # Ongaro's single-server change bug: two removals from different epochs whose majorities do not
    # intersect. Four voters shrinking to {1,2}, two election timeouts.
    "ongaro": {"servers": 4, "voters": [1, 2, 3, 4], "targets": [[1, 2]], "max_elections": 2, "max_writes": 0,
               "votes": "kip642"},
    # Votes counted against the previous configuration elect a leader that lacks entries committed
    # two configurations later: three voters growing to five, led by 3.
    "old-config": {"servers": 5, "voters": [1, 2, 3], "leader": 3, "targets": [[1, 2, 3, 4, 5]], "max_elections": 1,
                   "max_writes": 0, "votes": "kip642"},
    # A voter that restarts without its log (a lost disk): three voters, one reassignment to commit.
    "disk-loss": {"servers": 3, "voters": [1, 2, 3], "targets": [[1, 2]], "max_writes": 0, "max_disk_losses": 1},
    # Liveness with the graph engine (every rule fires, 25,330 states; docs/models/kip642.md, "Liveness triage"):
    # voter 1 replaced by 2 (add 2, 1 resigns, the next leader removes 1), a write, a cancellation, and one
    # disruption of any kind: an adversarial timeout, a crash or a lost disk.
    "liveness": {"servers": 2, "voters": [1], "targets": [[2]], "max_writes": 1, "max_cancels": 1, "max_crashes": 1,
                 "max_disk_losses": 1, "max_disruptions": 1},
    # Beyond BFS reach, for the Hypothesis engine: 5 servers, two reassignments, crashes, writes.
    "large": {"servers": 5, "voters": [1, 2, 3], "targets": [[3, 4, 5], [1, 4]], "max_reassignments": 2,
              "max_cancels": 1, "max_elections": 3, "max_writes": 2, "max_crashes": 1},
    "nightly": {"servers": 4, "max_elections": 2, "max_writes": 1, "max_crashes": 1, "max_cancels": 1},
    # KIP-642, Quorum Change Protocol: the example (1, 2, 3) -> (4, 5, 6) with replica 1 leading.
    "worked-example": {"servers": 6, "voters": [1, 2, 3], "targets": [[4, 5, 6]], "max_elections": 1,
                       "max_writes": 0},
}

EXPECTED: dict[str, str] = {}  # no preset shows a safety violation of the unmutated protocol

# Ongaro's scenario (raft-dev, 2015) in this protocol, with removals, as unguided BFS found it at
# `ongaro` (the shortest: 19 steps, 4,536,531 states, docs/models/kip642.md). 1 commits the target
# {1,2} and removes 3 (C1 = {1,2,4}, uncommitted); 3, still a voter in its own log, is elected in
# epoch 2 by {2,3,4}; 1, seeing a vote request from a non-voter, stands and is elected in epoch 3
# by {1,4}, a majority of C1; 3 removes 4 before committing anything of its epoch (the mutation)
# and commits C2 = {1,2,3} with {2,3}, which leader 1 lacks. {1,4} and {2,3} do not intersect.
# The corpus replays it as a guided search (harness.engines.guided) so the gate stays fast.
ONGARO_SCENARIO = [
    ('alter_partition_reassignments', {'leader': 1, 'target': 0}),
    ('fetch', {'follower': 2, 'leader': 1}),
    ('fetch', {'follower': 2, 'leader': 1}),
    ('fetch', {'follower': 3, 'leader': 1}),
    ('fetch', {'follower': 3, 'leader': 1}),
    ('advance_hwm', {'leader': 1}),
    ('fetch', {'follower': 3, 'leader': 1}),
    ('leader_step', {'leader': 1, 'member': 3}),
    ('become_candidate', {'server': 3}),
    ('handle_vote_request', {'voter': 2, 'candidate': 3}),
    ('handle_vote_request', {'voter': 4, 'candidate': 3}),
    ('stand_against_nonvoter', {'voter': 1, 'candidate': 3}),
    ('handle_vote_request', {'voter': 4, 'candidate': 1}),
    ('become_leader', {'candidate': 1}),
    ('become_leader', {'candidate': 3}),
    ('leader_step', {'leader': 3, 'member': 4}),
    ('fetch', {'follower': 2, 'leader': 3}),
    ('fetch', {'follower': 2, 'leader': 3}),
    ('advance_hwm', {'leader': 3}),
]

# Votes counted against the previous configuration: 3 grows {1,2,3} to {1,2,3,4} then {1,2,3,4,5},
# committing the last with {3,4,5}; 1, whose log ends at {1,2,3,4}, counts {1,2} against {1,2,3}.
OLD_CONFIG_SCENARIO = [
    ('alter_partition_reassignments', {'leader': 3, 'target': 0}),
    ('fetch', {'follower': 1, 'leader': 3}),
    ('fetch', {'follower': 1, 'leader': 3}),
    ('advance_hwm', {'leader': 3}),
    ('leader_step', {'leader': 3, 'member': 4}),
    ('fetch', {'follower': 1, 'leader': 3}),
    ('fetch', {'follower': 4, 'leader': 3}),
    ('fetch', {'follower': 1, 'leader': 3}),
    ('fetch', {'follower': 4, 'leader': 3}),
    ('advance_hwm', {'leader': 3}),
    ('leader_step', {'leader': 3, 'member': 5}),
    ('fetch', {'follower': 4, 'leader': 3}),
    ('fetch', {'follower': 5, 'leader': 3}),
    ('fetch', {'follower': 4, 'leader': 3}),
    ('fetch', {'follower': 5, 'leader': 3}),
    ('advance_hwm', {'leader': 3}),
    ('become_candidate', {'server': 1}),
    ('handle_vote_request', {'voter': 2, 'candidate': 1}),
    ('become_leader', {'candidate': 1}),
]
