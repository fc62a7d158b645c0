"""A duplicated Diverging answer must not truncate committed records (found by the replication
simulator's metadata quorum: ``kraft simulate --protocol replication --seed 15 --steps
3000 --faults all,isolate-leader`` broke StateMachineSafety on controller 3001 at event 1740).

Follower 3 holds an uncommitted record of epoch 1 at offset 1; a new leader (elected by 2, 4 and 5
in a later epoch) answers its fetch (offset 2, last epoch 1) with Diverging; the network delivers
that answer and keeps a copy.  3 truncates, fetches again and appends the new leader's records up
to offset 2, committed.  Then the copy arrives: its fetch offset equals 3's log end again, so a
follower that matched answers by offset alone truncated the committed record.  Kafka pairs a
response with its one in-flight request by correlation id; ours echoes the request's fetch offset
and last fetched epoch, and the follower handles only an answer to the position it holds now.
"""

from __future__ import annotations

from kraft.quorum.world import QuorumWorld
from kraft.quorum.messages import FETCH_DIVERGING, FetchResponse


def test_a_duplicated_diverging_answer_is_ignored_after_the_refetch() -> None:
    c = QuorumWorld(5)
    c.timeout(1)
    for _ in range(6):
        c.deliver_all()
    assert c.leader() == 1
    c.run(300, append_every_ms=0)                 # the LeaderChange committed everywhere
    c.partition([1, 3])                           # {1,3} | {2,4,5}
    c.append_value(1, 100)
    c.run(200, append_every_ms=0)                 # 3 fetched the record; not committed (2 of 5)
    assert [len(n.storage.entries) for n in c.nodes.values()] == [2, 1, 2, 1, 1]
    c.run(5000, append_every_ms=0)                # {2,4,5} elect a leader in a later epoch
    new = c.leader()
    assert new in (2, 4, 5)
    c.heal()
    c.pending.clear()
    stale = None
    for _ in range(400):
        c.advance(10)
        answers = [i for i, m in enumerate(c.pending)
                   if isinstance(m, FetchResponse) and m.dest == 3 and m.result == FETCH_DIVERGING]
        if answers:
            stale = c.pending[answers[0]]
            c.deliver(answers[0], keep_copy=True)   # delivered, and a copy stays in flight
            break
        c.deliver_all()
        c.check()
    assert stale is not None and (stale.fetchOffset, stale.lastFetchedEpoch) == (2, 1)
    c.run(300, append_every_ms=0)                 # 3 truncates, re-fetches, catches up, commits
    n3 = c.nodes[3]
    assert n3.storage.end_offset == 2 and n3.high_watermark == 2 and n3.storage.last_epoch > 1
    c.pending.append(stale)                       # the copy arrives now
    c.deliver(len(c.pending) - 1)
    c.check()                                     # StateMachineSafety: log end >= high watermark
    assert n3.storage.end_offset == 2 and n3.high_watermark == 2
