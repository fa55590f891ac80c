"""Properties of the example model."""

from harness.model import Violated
from specs.example import spec


@spec.invariant(name="CommittedOnIsr")
def committed_on_isr(cfg, s):
    """Every ISR member holds every committed record."""
    for b in range(1, cfg.brokers + 1):
        if s.isr >> b & 1 and s.log[b - 1] < s.hwm:
            return Violated(f"broker {b} is in the ISR with {s.log[b - 1]} of the {s.hwm} committed records")
    return True


@spec.invariant(name="CommittedOnMinIsr")
def committed_on_min_isr(cfg, s):
    """Committed records exist on at least MinISR brokers (on every broker if there are fewer)."""
    need = min(cfg.min_isr, cfg.brokers)
    if s.hwm == 0 or sum(1 for n in s.log if n >= s.hwm) >= need:
        return True
    holders = [b for b in range(1, cfg.brokers + 1) if s.log[b - 1] >= s.hwm]
    return Violated(f"the records below HWM {s.hwm} are on {len(holders)} broker(s) {holders}, fewer than "
                    f"min(MinISR, brokers) = {need}")
