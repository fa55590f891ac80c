"""The replication model's presets and its expected safety failures (EXPECTED), with what each is for;
TLC's counts at the parity presets are in docs/models/replication.md ("Parity with TLC")."""

P1 = {"broker_count": 3, "init_replication_factor": 3, "min_isr": 2, "init_isr_size": 2}
RESTART_FAULTS = {"broker_count": 2, "init_replication_factor": 2, "min_isr": 1, "init_isr_size": 1,
                  "clean_shutdown_limit": 1, "unclean_shutdown_limit": 1, "fence_broker_limit": 1}
PRESETS = {
    # the parity configs: TLC's distinct states and depth (with the VIEW) are in docs/models/replication.md
    "p1": {**P1, "write_commit": "tla"},
    "p3": {"write_commit": "tla", "broker_count": 3, "init_replication_factor": 2, "min_isr": 1, "init_isr_size": 2,
           "reassignment_limit": 1},
    "fence": {**P1, "fence_broker_limit": 1, "metadata_log_bound": 5},
    "tiny": {"broker_count": 2, "init_replication_factor": 2, "min_isr": 1, "init_isr_size": 1},
    "ci": dict(P1),
    # two brokers through every kind of fault: exhausted clean at 2,576,451 states, depth 51
    "restart_faults": RESTART_FAULTS,
    "nightly": RESTART_FAULTS,
    "restart": {"broker_count": 2, "init_replication_factor": 2, "min_isr": 1, "init_isr_size": 2,
                "clean_shutdown_limit": 1},
    # kafka-tlaplus kip-966's configuration file: one data-loss shutdown and one fence
    "kip966": {**P1, "kip966": True, "unclean_shutdown_limit": 1, "fence_broker_limit": 1},
    "kip966_fence": {**P1, "kip966": True, "fence_broker_limit": 1, "metadata_log_bound": 6},
    "kip966_small": {"kip966": True, "broker_count": 2, "init_replication_factor": 2, "min_isr": 1,
                     "init_isr_size": 2, "fence_broker_limit": 1, "clean_shutdown_limit": 1},
    # MinISR = DataLossShutdownLimit: a committed record can be lost (the known limit of acks=all)
    "kip966_loss": {"kip966": True, "broker_count": 2, "init_replication_factor": 2, "min_isr": 1,
                    "init_isr_size": 2, "unclean_shutdown_limit": 1, "clean_shutdown_limit": 1},
    # Liveness with the graph engine (every rule fires, 18,676 states; docs/models/replication.md, "Liveness triage"): one
    # replica on two brokers, a reassignment adding the other, and one disruption of any kind
    "liveness": {"broker_count": 2, "init_replication_factor": 1, "min_isr": 1, "init_isr_size": 1,
                 "reassignment_limit": 1, "clean_shutdown_limit": 1, "unclean_shutdown_limit": 1, "fence_broker_limit": 1,
                 "leader_shrink_isr_limit": 1, "max_disruptions": 1},
    # for random search: every perturbation at once, far beyond exhaustion
    "large": {"broker_count": 4, "init_replication_factor": 3, "min_isr": 2, "init_isr_size": 2, "values": 2,
            "fence_broker_limit": 1, "unclean_shutdown_limit": 1, "clean_shutdown_limit": 1,
            "leader_shrink_isr_limit": 1, "reassignment_limit": 1, "metadata_log_bound": 24, "message_bound": 8},
}

EXPECTED = {"kip966_loss": "NoCommittedRecordLostGlobally: with MinISR 1, the only ISR member acknowledges a "
                          "record and loses it in a data-loss shutdown (the TLA+ configuration file drops this "
                          "invariant when MinISR = DataLossShutdownLimit)"}
