"""The kip642 model's speed helpers, each measured; imported by the package after its rules. They change
how fast states are built, never which states.

* `fast_replace` on the state classes (every rule `_replace`s a Server and the State). Measured here: BFS
  of `ci` took 13.5 s and 15.4 s of CPU with it against 14.2 s and 16.8 s without (5-8%, same 412,495
  states, runs alternated); the cost of a stdlib `_replace` against `fast_replace`: docs/PERFORMANCE.md,
  2026-11-22 (session 14)."""

from harness.speed import fast_replace
from specs.kip642.state import Budget, Entry, Server, State

fast_replace(Entry, Server, Budget, State)
