"""KIP-435 incremental, batched partition reassignment.

Who acts: the controller (computes a reassignment step per partition, collects a batch of them,
starts the new replicas, elects the preferred leader, forces the dropped replicas out of the ISR
and deletes them), new replicas (catch up by fetching and join the ISR), brokers (fail and recover).
Brokers are 1..N as in the other models (the pure step function takes any ids: its
test uses the KIP's 0..9).

Sources: KIP-435, "Internal Partition Reassignment Batching" (Apache Kafka wiki), by section: "Proposed
Changes" (the worked example, the MinISR top-up, the preferred leader first), "Calculating a Reassignment
Step" (rules 1-5), "Collecting a reassignment batch", "Performing reassignment for a single partition" (the
existing and the new algorithm's steps); the KIP author's draft implementation, apache/kafka PR #6011.
The step calculation is the pure function `step` (logic.py); the model applies it to several partitions in
batches and executes each step.

Abstractions (docs/models/kip435.md):
* Fetch is abstracted as in `kraft`'s controller view: a live replica of a partition with a live
  leader catches up in one step and joins the ISR. Records are not modelled one by one: the ISR
  is the set of replicas that hold every acknowledged record, so acknowledged records are lost
  exactly when a partition's ISR becomes empty by a deletion (`lost`).
* A broker failure removes it from every ISR unless it is the last member (Kafka keeps the last
  one) and moves leadership to another live in-sync replica; there is no unclean election.
* The controller does not fail; a batch's steps start atomically when the batch is collected.
* R, P and L change only between batches (`change_config`, budgeted), so a change affects the next
  step calculation only (KIP-435, Proposed Changes).

The choices the KIP leaves open are variants (`Kip435Config`). The defaults are KIP-435 as written: the
worked example's step calculation and the new algorithm's step list, which waits for nothing before
forcing DR out; it loses acknowledged records on the KIP's own example (`EXPECTED`, presets.py).

Layout: state.py (records, config), presets.py, logic.py (the step calculation and the helpers the rules
share), one module of rules per actor (controller.py, brokers.py, admin.py, faults.py), view.py (the
explorer's drawing), symbolic.py (the Z3 form, hooked up in invariants/kip435.py).
"""

from __future__ import annotations

from itertools import product

from harness.bitset import mask
from harness.model import Spec
from specs.kip435.logic import behind_choices, brokers as broker_ids  # `brokers` names the actor module below
from specs.kip435.presets import EXPECTED, PRESETS
from specs.kip435.state import Kip435Config, Limits, Partition, State

spec = Spec("kip435", Kip435Config, State, doc=__doc__, presets=PRESETS, deadlock=True, expected=EXPECTED)
spec.mutation("drop_before_in_sync", rule="drop_replicas", caught_at="drop2",
              removes="waiting for NR in the ISR before forcing DR out (the existing algorithm's step 4)")
spec.mutation("ignore_r", rule="collect_batch", caught_at="short",
              removes="the parallel replica count R in the step calculation (KIP-435, Calculating a "
                      "Reassignment Step, rules 2.3 and 3.4)")
spec.mutation("ignore_l", rule="collect_batch", caught_at="leaders",
              removes="the leader movement limit L (KIP-435, Collecting a reassignment batch)")
spec.mutation("skip_topup", rule="collect_batch", caught_at="short",
              removes="the MinISR top-up of the first step (KIP-435, Proposed Changes; rule 3.3)")
spec.mutation("leader_later", rule="collect_batch", caught_at="leader-first",
              removes="adding FTR's new preferred leader first (KIP-435, Proposed Changes; Calculating a "
                      "Reassignment Step, rule 3.2)")
spec.mutation("keep_leader", rule="drop_replicas", caught_at="leader-first",
              removes="electing the new preferred leader by the end of the first step (KIP-435, Proposed Changes)")
spec.mutation("no_reorder", rule="collect_batch", caught_at="order",
              removes="ordering the last step as FTR (KIP-435, Calculating a Reassignment Step, rule 5)")


@spec.init
def init(cfg):
    """Every partition at its CR, led by its first replica; up to `lagging` other replicas behind (in CR,
    not in the ISR), every choice of them an initial state."""
    for isrs in product(*(behind_choices(cr, cfg.lagging) for cr in cfg.replicas)):
        parts = tuple(Partition(replicas=tuple(cr), isr=isr, leader=cr[0], adding=0, removing=0, target=(), step_isr=0,
                                step_r=0, start_isr=isr.bit_count(), steps=0)
                      for cr, isr in zip(cfg.replicas, isrs))
        yield State(partitions=parts, limits=Limits(cfg.r, cfg.p, cfg.l), config_changes=cfg.max_config_changes,
                    alive=mask(broker_ids(cfg)), failures=cfg.max_failures, leader_moves=0,
                    batch_size=0, shrunk=0, lost=0, late=0)


@spec.quiescent
def quiescent(cfg, s):
    """Done: every partition at its FTR."""
    return all(p.replicas == cfg.targets[i] and not p.target for i, p in enumerate(s.partitions))


from specs.kip435 import admin, brokers, controller, faults, view  # noqa: E402  registers the rules and the view

MODULES = (admin, brokers, controller, faults, view)  # what importing them registered: rules, drawing

# The order engines try the rules in (BFS's successor order, its first-found states and the committed traces).
spec.order_rules("collect_batch", "change_config", "catch_up", "elect_preferred_leader", "drop_replicas", "fail",
                 "recover")
