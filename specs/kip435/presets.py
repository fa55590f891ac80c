"""The `kip435` model's presets (`PRESETS`) and the safety failures expected at them on the unmutated
protocol (`EXPECTED`: the corpus commits each one's shortest trace)."""

# The existing algorithm's wait (step 4), for the presets that check something other than the execution: the
# default (KIP-435's own step list) loses records on most of them, which would hide what they check.
WAIT_FOR_TARGET = {"wait": "target"}

# `nightly`'s config, which the scale runs' `scale` and `huge` extend with more broker failures.
NIGHTLY = {"brokers": 5, "replicas": [[1, 2, 3], [2, 3, 4], [3, 4, 5]], "targets": [[4, 5, 1], [1, 5, 3], [1, 2, 3]],
           "r": 1, "p": 2, "l": 1, "min_isr": 2, "max_failures": 2, "max_config_changes": 1, **WAIT_FOR_TARGET}

PRESETS = {
    # One partition (1,2) -> (3,2): no leader movement, one step.
    "tiny": {"brokers": 3, "replicas": [[1, 2]], "targets": [[3, 2]], "r": 1},
    # A new preferred leader whose slot CR's order does not free: (1,2,3) -> (4,1,5) adds 4 before anything
    # moves; without rule 3.2 the first step is (1,4,3) and 4 leads only at the end.
    "leader-first": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[4, 1, 5]], "r": 1, **WAIT_FOR_TARGET},
    # Three partitions, R = 1, P = 2, L = 1, MinISR 2, two broker failures, a change of R/P/L: every rule
    # fires (290,055 states, depth 26). The existing algorithm's wait: the gate exhausts it for no violation.
    "ci": {"brokers": 4, "replicas": [[1, 2], [2, 3], [3, 1]], "targets": [[3, 4], [3, 4], [4, 1]], "r": 1, "p": 2,
           "l": 1, "min_isr": 2, "max_failures": 2, "max_config_changes": 1, **WAIT_FOR_TARGET},
    # KIP-435, "Proposed Changes": (0,1,2,3,4) -> (5,6,7,8,9), R = 2, leader 0; brokers shifted by one.
    # MinISR 1 (Kafka's default). KIP-435 as written loses acknowledged records here (`expected` below).
    "example": {"brokers": 10, "replicas": [[1, 2, 3, 4, 5]], "targets": [[6, 7, 8, 9, 10]], "r": 2},
    # Two partitions that both move their leader, P = 2, L = 1: a batch may not move both leaders.
    "leaders": {"brokers": 4, "replicas": [[1, 2], [2, 1]], "targets": [[3, 4], [4, 3]], "p": 2, "l": 1,
                **WAIT_FOR_TARGET},
    # An under-replicated partition: (1,2,3) with up to 2 behind, MinISR 3, R = 1: with only 1 in sync the
    # first step must add two replicas, beyond R (KIP-435, "Proposed Changes").
    "short": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[1, 4, 5]], "lagging": 2, "min_isr": 3, "r": 1,
              **WAIT_FOR_TARGET},
    # The last step needs reordering: (1,2) -> (2,3) gives (3,2) before rule 5.
    "order": {"brokers": 3, "replicas": [[1, 2]], "targets": [[2, 3]], "r": 1, **WAIT_FOR_TARGET},
    # Three replicas, two dropped at once, MinISR 2.
    "drop2": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[1, 4, 5]], "r": 2, "min_isr": 2, **WAIT_FOR_TARGET},
    # The unsafe readings of the KIP (the corpus commits each one's shortest trace; `expected` below).
    "no-wait": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[1, 4, 5]], "r": 2, "min_isr": 2, "wait": "none"},
    # (1,2,3) -> (2,4) with up to one replica behind, R = 2, MinISR 2, no failures: with 2 behind, the step
    # drops 1 and 3 and waits for 4 only.
    "wait-new": {"brokers": 4, "replicas": [[1, 2, 3]], "targets": [[2, 4]], "lagging": 1, "r": 2, "min_isr": 2,
                 "wait": "new"},
    "pseudocode": {"brokers": 4, "replicas": [[1, 2], [2, 1]], "targets": [[3, 4], [4, 3]], "p": 2, "l": 1,
                   "batch": "pseudocode", **WAIT_FOR_TARGET},
    "leaves": {"brokers": 4, "replicas": [[1, 2], [2, 1]], "targets": [[3, 4], [4, 3]], "p": 2, "l": 1,
               "moves": "leaves", **WAIT_FOR_TARGET},
    "text-topup": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[1, 4, 5]], "lagging": 2, "min_isr": 3, "r": 1,
                   "reading": "text", **WAIT_FOR_TARGET},
    "text-leader": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[4, 1, 5]], "r": 1, "reading": "text",
                    **WAIT_FOR_TARGET},
    # Where the gate and the nightly job check liveness (graph engine): KIP-435 as written (wait=none), `ci`'s first
    # two partitions (both add the new preferred leader 3: P = 2, L = 1 binds), MinISR 1 (Kafka's default), one
    # broker failure, one change of R/P/L; every rule fires (30,676 states). ReachesFTR fails here, declared in
    # __init__.py (docs/models/kip435.md, "Liveness triage").
    "liveness": {"brokers": 4, "replicas": [[1, 2], [2, 3]], "targets": [[3, 4], [3, 4]], "r": 1, "p": 2, "l": 1,
                 "max_failures": 1, "max_config_changes": 1},
    # Three partitions of three replicas, two broker failures, a change of R/P/L (1,324,169 states, depth 33).
    "nightly": NIGHTLY,
    # `nightly` with a third broker failure (19,372,846 states, depth 39): the scaling runs of the Spark engine
    # (bench/spark_scaling.py, docs/PERFORMANCE.md), a search past 10^7 states that one process exhausts in minutes.
    "scale": {**NIGHTLY, "max_failures": 3},
    # `nightly` with four broker failures: every broker but one may fail during the batches, each may recover
    # (141,771,334 states, depth 44): BFS with its frontier on disk (docs/PERFORMANCE.md, "BFS frontier on disk").
    "huge": {**NIGHTLY, "max_failures": 4},
}

# KIP-435 as written, and the readings of it that are unsafe: each fails at the preset of its name.
EXPECTED = {
    "example": "KIP-435 as written (the default: wait=none) on its own example, R = 2, MinISR 1: the steps force DR "
               "out of the ISR before NR catch up, until the last in-sync replica is deleted (Performing reassignment "
               "for a single partition, steps 8-9: nothing waits for NR)",
    "no-wait": "the new algorithm's step list (wait=none, the default): DR forced out of the ISR before the new "
               "replicas are in sync (KIP-435, Performing reassignment for a single partition, steps 8-9)",
    "liveness": "KIP-435 as written (wait=none, the default) with a broker failure: a step forces DR out of the ISR "
                "before NR catch up and deletes the last in-sync replica (Performing reassignment for a single "
                "partition, steps 8-9), as at `no-wait`; the liveness failure it leads to is declared in "
                "invariants/kip435.py",
    "wait-new": "waiting for NR only (wait=new): a TR replica behind at the start is not waited for, so DR leave "
                "the ISR below MinISR (the existing algorithm's step 4 waits for every target replica)",
    "pseudocode": "the batch pseudo-code as written (batch=pseudocode): leader movements fill the batch before L "
                  "is applied (KIP-435, Collecting a reassignment batch)",
    "leaves": "a leader movement counted only when the current leader leaves TR (moves=leaves): a step that makes "
              "a new preferred leader lead escapes L (KIP-435, Collecting a reassignment batch)",
    "text-topup": "rule 3.3 read literally (reading=text): the MinISR top-up is capped at min(MinISR, R), against "
                  "Proposed Changes (KIP-435, Calculating a Reassignment Step)",
    "text-leader": "rule 4 read literally (reading=text): TR = CR + NR - DR puts the new preferred leader after the "
                   "survivors, so the first step does not make it lead (KIP-435, Proposed Changes)",
}
