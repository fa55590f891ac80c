"""The kraft model's presets (named configs) and its expected safety failures (the known-unsafe configs)."""

from specs.kraft.state import REASSIGNMENT_DESC, REPLICATION_DESC

PRESETS = {
    # A move [1,2] -> [2,3] that removes the leader, with a cancellation and one record: no faults.
    "tiny": {"max_faults": 0},
    # The sole in-sync replica loses its log in an unclean shutdown during the move (ELR cleared by the
    # restart): with unclean election off no replica may lead, so the reassignment never completes. The
    # expected ReassignmentCompletes failure (12,712 states; 7-step lasso).
    "leaderless": {"isr": [1], "max_records": 0, "max_cancels": 0, "max_faults": 0, "max_unclean_shutdowns": 1},
    # Remove replica 3, then add it back: a replica removed in the same leader epoch may have kept fetching,
    # so only the completion's leader-epoch bump stops the leader from trusting its stale fetch state when
    # the replica returns with an empty log. 3 starts outside the ISR: the leader proposes adding a follower
    # only on its fetch, and an ISR member's fetch leaves no mark (47,141 states; with 3 in the ISR, 10,289
    # states, the mutation survived once expansion followed fetches).
    "remove-readd": {"replicas": [1, 2, 3], "isr": [1, 2], "targets": [[1, 2], [1, 2, 3]], "max_reassignments": 2,
                     "max_records": 2, "max_cancels": 0, "max_faults": 0},
    # The move with one fencing or clean shutdown and nothing else: the smallest config where ELR matters.
    "tiny-fence": {"max_faults": 1, "max_records": 0, "max_cancels": 0},
    # A move [1,2] -> [2,3] whose new broker 3 may die for good: the reassignment cannot complete (the
    # expected ReassignmentCompletes failure), but the partition stays available on 1 and 2.
    "gone-target": {"max_faults": 0, "max_cancels": 0, "max_permanent_failures": 1},
    # Exhausted by BFS in about a minute, every rule fires: the move of an under-replicated partition
    # (follower 2 not yet in the ISR), a record, a cancellation, and one disruption of any kind.
    "ci": {"isr": [1], "max_records": 1, "max_unclean_shutdowns": 1, "max_shrinks": 1, "max_permanent_failures": 1,
           "max_disruptions": 1},
    # Liveness with the graph engine (every rule fires, 61,036 states; docs/models/kraft.md, "Liveness"):
    # the move [1,2] -> [2] of an under-replicated partition (follower 2 not yet in the ISR, MinISR 1), a record,
    # a cancellation, and one disruption of any kind, a permanent failure included.
    "liveness": {"brokers": 2, "replicas": [1, 2], "isr": [1], "targets": [[2]], "min_isr": 1, "max_records": 1,
                 "max_unclean_shutdowns": 1, "max_shrinks": 1, "max_permanent_failures": 1, "max_disruptions": 1},
    # The mutations' config: the move, two records, a cancellation, one unclean shutdown.
    "small": {"max_faults": 0, "max_unclean_shutdowns": 1, "max_records": 2},
    # Two brokers, the follower outside the ISR, Kafka's default MinISR 1, no reassignment: the smallest
    # config of the ISR-expansion bugs of [kafka-tlaplus v3.5 §2.9] (the config of expand_without_fetch_in_epoch).
    "lagging": {"brokers": 2, "replicas": [1, 2], "isr": [1], "min_isr": 1, "targets": [[1, 2]],
                "max_reassignments": 0, "max_cancels": 0, "max_faults": 0, "max_unclean_shutdowns": 1,
                "max_records": 2},
    # Faults of every kind together (for the Spark engine): fencing or clean shutdown, power loss, ISR shrink.
    "faults": {"max_unclean_shutdowns": 1, "max_shrinks": 1},
    # Known-unsafe configurations (expected counterexamples, see EXPECTED below).
    "unclean-election-loss": {"unclean": True, "max_faults": 2},
    "last-replica-standing": {"elr": False, "max_unclean_shutdowns": 2},
    "kafka-cancel-without-elr": {"completion": "kafka", "elr": False, "isr": [1], "max_records": 1,
                                 "max_unclean_shutdowns": 1, "max_disruptions": 1},
    # tiny-fence with Kafka 4.4's controller: the move [1,2] -> [2,3] completes with ISR {3} < MinISR 2.
    "kafka-4.4-completion-below-min-isr": {"completion": "kafka-4.4", "max_faults": 1, "max_records": 0,
                                           "max_cancels": 0},
    # Beyond BFS reach, for the Hypothesis engine: 6 brokers, RF 5, two reassignments and faults.
    "large": {"brokers": 6, "replicas": [1, 2, 3, 4, 5], "isr": [1, 2, 3, 4, 5], "min_isr": 3,
              "targets": [[1, 2, 3, 4, 6], [2, 3, 4, 5, 6]], "max_reassignments": 2, "max_records": 3, "max_faults": 2,
              "max_unclean_shutdowns": 1, "max_shrinks": 1},
    "nightly": {"brokers": 4, "replicas": [1, 2, 3], "isr": [1, 2, 3], "targets": [[1, 2, 4], [3, 4]],
                "max_records": 2, "max_unclean_shutdowns": 1, "max_shrinks": 1},
    # The move [1,2] -> [2,3] with every kind of fault the model has, once each (a fencing or clean shutdown, an
    # unclean shutdown, an ISR shrink, a permanent failure), two records (a committed record then one that may
    # not be) and no cancellation: the data-loss question of a reassignment under faults, for BFS with its
    # frontier on disk: 100,705,517 states visited in 5.28 GiB and 1 h 31 min, not exhausted (about 2.4 x 10^8
    # by its levels' growth; docs/PERFORMANCE.md, "141,771,334 states in one process").
    "huge": {"max_unclean_shutdowns": 1, "max_shrinks": 1, "max_permanent_failures": 1, "max_records": 2,
             "max_cancels": 0},
}

EXPECTED = {
    "unclean-election-loss": "unclean leader election (enabled) elects a replica without the committed log: acknowledged data is lost",
    "last-replica-standing": "without ELR, the last ISR member loses its unflushed suffix in an unclean shutdown and stays "
                             f"the only leader candidate ({REPLICATION_DESC} §2.4.1; fixed by KIP-966)",
    "kafka-cancel-without-elr": "Kafka's controller (ReplicationControlManager.cancelPartitionReassignment) refuses a "
                                "cancellation only when the reverted ISR is empty, not below MinISR as "
                                f"{REASSIGNMENT_DESC} §4.5 does; without ELR the leader then commits with "
                                "ISR < MinISR and one unclean shutdown loses the committed record",
    "kafka-4.4-completion-below-min-isr": "Kafka 4.4's controller (PartitionReassignmentReplicas, KAFKA-19975) "
                                          "completes a reassignment once its adding replicas are in the ISR when the "
                                          "target is not smaller than the current assignment: [1,2] -> [2,3] with "
                                          "broker 2 fenced completes with ISR {3} < MinISR 2 (Kafka 4.4.0 does so, "
                                          "`conform`); the ISR was already below MinISR and the ELR keeps 1 and 2 "
                                          f"as leader candidates, but {REASSIGNMENT_DESC} §4.2's completion rule 1 "
                                          "no longer holds",
}
