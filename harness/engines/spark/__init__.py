"""Exhaustive exploration with PySpark: long-lived level workers, one barrier job for the whole search.

Design (measurements in docs/PERFORMANCE.md, trade-offs in docs/spark.md):

* One Spark barrier job of T tasks runs every level; a task is a `LevelWorker` that lives for the
  whole job and keeps its share of the visited set (the fingerprints `owners` gives it) and the
  frontier states it generated, as Python objects, from one level to the next. Tasks meet three times
  a level (`BarrierTaskContext.barrier`, `allGather`) and exchange only numbers, in Arrow files in
  the checkpoint directory: candidates' (fingerprint, tie, parent, action) to their owner, and which
  of them were new back to the sender. No state is pickled through the JVM or decoded on the way.
* Strictly level-synchronous, so counterexamples are shortest. Determinism: of the candidates for
  one fingerprint the smallest (tie, parent, action) wins; of the violations of a property at its
  first depth, the smallest fingerprint. Neither depends on T.
* Task 0 commits every level (harness.checkpoint: the parents of each depth and the frontier, which
  do not depend on T). A run killed at any moment resumes (`--resume`) from the last committed level,
  with any number of tasks, and ends with exactly the results of an uninterrupted run. A job that
  fails (a lost executor) is run again from there by the driver, with the slots the cluster still has.
* Levels run in the driver (the same worker, one task, no files exchanged) while the SparkSession
  starts in a background thread and while frontiers are small; shallow bugs are found before Spark
  is up.

The checkpoint directory, its layout and its integrity checks are `harness.checkpoint`'s. Executors
must see it (local mode: always; a cluster: a shared path).

The parts, one module each:
  driver    `explore`: the job, the levels the driver runs, the barrier jobs, resumes, counterexamples
  worker    `LevelWorker` and the level loop, what each task runs
  exchange  who owns a fingerprint, and the Arrow files the tasks exchange
  session   the SparkContext, its JVM and network settings, the executors
  archive   the driver JVM's class-data-sharing archive (`make_class_archive`, built by `make`)
This module is the engine's entry: what the CLI, CI, the Makefile and the tests use.
"""

from harness.engines.spark.archive import class_archive, make_class_archive
from harness.engines.spark.driver import CHECKPOINT_EVERY, explore, make_job
from harness.engines.spark.exchange import owner, owners
from harness.engines.spark.session import EXECUTOR_WAIT, network_settings, start_session, stop_session
from harness.engines.spark.worker import LevelWorker, run_levels, run_task

__all__ = ["CHECKPOINT_EVERY", "EXECUTOR_WAIT", "LevelWorker", "class_archive", "explore", "make_class_archive",
           "make_job", "network_settings", "owner", "owners", "run_levels", "run_task", "start_session", "stop_session"]
