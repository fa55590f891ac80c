"""The zk model's measured speed helpers, in one place (figures: docs/PERFORMANCE.md, "Fingerprints and
encodings": `fast_replace` measured about twice as fast as the stdlib's `_replace`).

* `fast_replace` on every record: `_replace` is the hot path of every rule (a state is a tree of
  NamedTuples rebuilt on each step); the generated replacement is faster than NamedTuple's own.
"""

from harness.speed import fast_replace
from specs.zk.state import Broker, Budget, Controller, Request, State, Zk

fast_replace(Zk, Controller, Request, Broker, Budget, State)
