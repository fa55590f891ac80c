"""How `harness explore` draws a `kip435` state (template views/assignment.html): each partition's replicas
against its final target, its running step (NR, DR, TR), and the batch's phase and limits."""

from __future__ import annotations

from harness.bitset import as_list
from harness.itf import IdSet, OptId
from harness.symmetry import unnamed_ids
from specs.kip435 import spec
from specs.kip435.state import Kip435Config, State


@spec.protocol_view
def drawn(cfg: Kip435Config, s: State) -> dict:
    """The state as `harness explore` draws an assignment (template views/assignment.html): each partition's
    replicas against its final target, its running step (NR, DR, TR) and the batch's phase and limits."""
    def show_set(m: int) -> str:
        return IdSet().show(m)

    sections, phases = [], []
    for n, (p, ftr) in enumerate(zip(s.partitions, cfg.targets)):
        if tuple(p.replicas) == tuple(ftr) and not p.target:
            phase = "done"
        elif p.target:
            phase = f"step {p.steps} running"
        else:
            phase = "idle" if not p.steps else f"between steps ({p.steps} taken)"
        phases.append(f"partition {n}: {phase}")
        sections.append({"title": f"partition {n}", "rows": [
            ("phase", phase), ("replicas (CR)", as_list(p.replicas)), ("final target (FTR)", as_list(ftr)),
            ("ISR", show_set(p.isr)), ("leader", OptId().show(p.leader)), ("adding (NR)", show_set(p.adding)),
            ("removing (DR)", show_set(p.removing)), ("step target (TR)", as_list(p.target) if p.target else "none"),
            ("steps taken", str(p.steps))]})
    sections.append({"title": "cluster", "rows": [
        ("alive", show_set(s.alive)), ("limits R, P, L", f"{s.limits.r}, {s.limits.p}, {s.limits.l}"),
        ("batch size", str(s.batch_size)), ("leader moves in batch", str(s.leader_moves)),
        ("failures", str(s.failures)), ("config changes", str(s.config_changes))]})
    return {"kind": "assignment", "phase": "; ".join(phases), "sections": sections}


def interchangeable(cfg: Kip435Config) -> list[tuple[int, ...]]:
    """Symmetry: the brokers the config names nowhere (no partition's current or target replica) behave alike."""
    return unnamed_ids(cfg.brokers, *cfg.replicas, *cfg.targets)


spec.symmetry(interchangeable, id_fields=("replicas", "target"))  # a partition's CR and TR, ordered lists
