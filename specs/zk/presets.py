"""The zk model's presets, and the ones where a safety property is expected to fail (EXPECTED, with why)."""

PRESETS = {
    # The smallest move that changes the leader: [1] -> [2], one record, one controller fail-over.
    "tiny": {"brokers": 2, "replicas": [1], "targets": [[2]], "max_broker_crashes": 0},
    # Exhausted by BFS in about a minute: a move with an overlap broker and a moving leader, one record,
    # and one disruption: a controller crash (fail-over) or a broker crash. (No ISR shrink: in the seed
    # reading a leader's shrink during phase B is a known failure, "seed-shrink-in-phase-b".)
    "ci": {"max_disruptions": 1},
    # The mutations' config: the move, one controller crash, no broker faults.
    "small": {"max_broker_crashes": 0},
    # A deposed controller that keeps running (fencing by /controller_epoch and by controller epochs at
    # brokers), on a move that only adds a replica (the mutation's config: no removal, so the zombie's
    # effect shows as a state-znode write); "zombie_remove": the move [1,2] -> [2,3].
    "zombie": {"targets": [[1, 2, 3]], "max_zombies": 1, "max_broker_crashes": 0},
    "zombie_remove": {"max_zombies": 1, "max_broker_crashes": 0, "max_records": 0},
    # Kafka's controller with cancellation and replacement.
    "kafka-cancel-failover": {"controller": "kafka", "targets": [[3, 1]], "max_cancels": 1, "max_records": 0,
                              "max_disruptions": 2},
    "kafka_small": {"controller": "kafka", "targets": [[2, 3], [3, 1]], "max_reassignments": 2, "max_cancels": 1,
                    "max_broker_crashes": 0, "max_failovers": 0},
    # Kafka's cancellation after the leader moved to an adding replica and an original one left the ISR.
    "kafka_cancel_faults": {"controller": "kafka", "targets": [[3, 1]], "max_cancels": 1, "max_failovers": 0,
                            "max_shrinks": 1, "max_disruptions": 2},
    # [seed]'s own example, beyond BFS reach: for Hypothesis.
    "large": {"brokers": 6, "replicas": [1, 2, 3], "targets": [[4, 5, 6]], "max_records": 2, "max_failovers": 2,
              "max_zombies": 1, "max_shrinks": 1, "max_preferred": 1},
    # The nightly's Spark run: Kafka's controller at the ci move, with an ISR shrink as a third disruption
    # (1,429,933 states). Bigger configs were stopped at 2-3 million states, below depth 25.
    "nightly": {"controller": "kafka", "max_shrinks": 1, "max_disruptions": 1},
    # Kafka's controller moving [1,2] -> [2,3] with two records under two disruptions among a controller
    # fail-over, a broker crash and an ISR shrink, in any order: for BFS with its frontier on disk,
    # 215,766,937 states, exhausted in 2 h 40 min (docs/PERFORMANCE.md, "141,771,334 states in one
    # process").
    "huge": {"controller": "kafka", "max_shrinks": 1, "max_records": 2, "max_disruptions": 2},
    # Where the gate and the nightly job check liveness (graph engine): Kafka's controller with a replacement
    # (two targets, one of them the original replicas), a cancellation, a preferred election and one
    # disruption among a controller fail-over, a broker crash and an ISR shrink; no record (with one, above
    # 600,000 states), so produce and advance_hwm are the only rules that do not fire.
    "liveness": {"controller": "kafka", "brokers": 2, "replicas": [1], "targets": [[2, 1], [1]],
                 "max_reassignments": 2, "max_cancels": 1, "max_preferred": 1, "max_shrinks": 1,
                 "max_disruptions": 1, "max_records": 0},
    # Known-unsafe configurations (expected counterexamples, see EXPECTED).
    "kafka-replace-failover": {"controller": "kafka", "brokers": 2, "replicas": [1], "targets": [[1], [1, 2]],
                               "max_reassignments": 2, "max_broker_crashes": 0, "max_records": 0},
    "seed-shrink-in-phase-b": {"brokers": 2, "replicas": [1, 2], "targets": [[2]], "max_shrinks": 1,
                               "max_failovers": 0, "max_broker_crashes": 0, "max_records": 0},
    "unclean-loss": {"unclean": True, "max_failovers": 0, "max_broker_crashes": 2, "max_shrinks": 1,
                     "max_reassignments": 0},
}

EXPECTED = {
    "seed-shrink-in-phase-b": "the seed reading (a leader writes the ISR to ZooKeeper itself, as before AlterPartition) "
                              "lets the leader shrink a TRS replica out of the ISR after phase B began: B3 then has "
                              "no candidate, B4 keeps the removed replica as the ISR's last member, and B6 writes "
                              "RS = TRS, leaving a non-replica in the ISR (Kafka 3.9 handles ISR changes between "
                              "controller events, so its phase B cannot be overtaken)",
    "kafka-cancel-failover": "Kafka's cancellation writes RS = ORS to the topic znode (U1) before it takes an adding "
                             "replica out of the ISR (U3): a controller crash in between leaves a non-replica in the "
                             "ISR for good (the next controller finds a plain assignment and nothing to stop)",
    "kafka-replace-failover": "a reassignment replaced by one whose target is the original replicas writes that plain "
                              "assignment to the topic znode (U1) before it stops the dropped adding replica (U3): a "
                              "controller crash in between leaves that replica following for good, a stray replica "
                              "(the next controller does not know it, and the ZooKeeper controller has no clean-up of stray "
                              "replicas; KAFKA-13972 fixed another path to the same stray replica in 3.5)",
    "unclean-loss": "unclean leader election (enabled) elects a replica without the acknowledged record: "
                    "the record is lost",
}
