"""Fair share of the agents across running jobs: which jobs the next leased tasks come from.

Weighted fair queueing by virtual time (start-time fair queueing, in the manner of stride scheduling): every job has
a pass; each task leased from a job advances its pass by 1 / weight, and the next task comes from the job whose pass
after one more task is smallest. Jobs of equal priority therefore alternate, and in the long run a job's share of
the tasks leased is its weight over the sum of the weights of the jobs with tasks queued.

A job enters (first seen, or back after it had nothing queued or held) at the smallest pass of the jobs already
there plus what it holds (its leased tasks over its weight), so it can neither bank credit while idle nor jump
ahead of the work it already has. The passes are this process's memory (`FairShare`, one per tuner process); the
held counts come from the database, so a restarted tuner, or one of several, starts fair from what agents hold.

A job's weight is 2 ** (priority / PRIORITY_DOUBLING): ten more points of priority double its share, so small
differences share and large ones come close to strict precedence.
"""
from __future__ import annotations

import heapq
import threading
from collections.abc import Sequence
from dataclasses import dataclass

PRIORITY_DOUBLING = 10


def share_weight(priority: int) -> float:
    """A job's weight in the fair share (priority 0: 1.0)."""
    return 2.0 ** (priority / PRIORITY_DOUBLING)


@dataclass(frozen=True)
class JobDemand:
    """What one job holds and offers now. `order` breaks ties (smaller first: the older job)."""

    job_id: str
    priority: int
    held: int  # its tasks leased to agents now
    queued: int  # its tasks waiting for an agent
    order: tuple = ()


class FairShare:
    """The passes of the jobs competing for one pool of agents (`scope`: a device class); thread-safe."""

    def __init__(self) -> None:
        self._passes: dict[str, dict[str, float]] = {}
        self._lock = threading.Lock()

    def plan(self, jobs: Sequence[JobDemand], n: int, scope: str = "") -> list[str]:
        """The job of each of the next `n` tasks, in the order to hand them out (fewer when the queues run dry);
        the passes advance as if all of them were leased. Jobs not in `jobs` are forgotten (they re-enter fresh)."""
        with self._lock:
            known = self._passes.get(scope, {})
            floor = min((known[j.job_id] for j in jobs if j.job_id in known), default=0.0)
            passes = {j.job_id: known.get(j.job_id, floor + j.held / share_weight(j.priority)) for j in jobs}
            order = _deal(jobs, passes, n)
            self._passes[scope] = passes
            return order


def plan(jobs: Sequence[JobDemand], n: int) -> list[str]:
    """`FairShare().plan`: a decision from what the jobs hold alone (no memory of earlier leases)."""
    return FairShare().plan(jobs, n)


def _deal(jobs: Sequence[JobDemand], passes: dict[str, float], n: int) -> list[str]:
    """Hand out n tasks by smallest pass after the task; advances `passes` in place."""
    heap = []
    for job in jobs:
        if job.queued > 0:
            weight = share_weight(job.priority)
            heap.append((passes[job.job_id] + 1 / weight, -job.priority, job.order, job.job_id, weight, job.queued))
    heapq.heapify(heap)
    out: list[str] = []
    while heap and len(out) < n:
        finish, neg_priority, order, job_id, weight, queued = heapq.heappop(heap)
        out.append(job_id)
        passes[job_id] = finish
        if queued > 1:
            heapq.heappush(heap, (finish + 1 / weight, neg_priority, order, job_id, weight, queued - 1))
    return out
