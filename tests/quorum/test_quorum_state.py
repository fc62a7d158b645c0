"""The quorum-state file, versions 0 and 1, as Kafka's ``FileQuorumStateStore`` writes and reads
it (``QuorumStateData.json``: the version's fields in schema order, then ``data_version``)."""

from __future__ import annotations

import pytest

from kraft.log import MemoryFS
from kraft.quorum.storage import QUORUM_STATE_FILE, ElectionState, QuorumStorage

DIR = "J8aAPcfLQt2bqs1JT_rMgQ"


def _storage() -> QuorumStorage:
    return QuorumStorage.open(MemoryFS(), "/q")


def _file(st: QuorumStorage) -> bytes:
    return st.fs.read_bytes(f"/q/{QUORUM_STATE_FILE}")


def test_version_0_under_kraft_version_0() -> None:
    st = _storage()
    st.write_quorum_state(2, 1, None, (1, 2, 3))
    # the layout of FileQuorumStateStore's version-0 example, on one line
    assert _file(st) == (b'{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
                         b'"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}')
    assert st.read_election_state() == ElectionState(2, 1, None, voters=(1, 2, 3))
    assert st.read_quorum_state_full() == (2, 1, None, False)


def test_version_1_carries_the_voted_directory_id() -> None:
    st = _storage()
    st.write_quorum_state(2, None, 1, (1, 2, 3), kraft_version=1, voted_directory_id=DIR)
    # FileQuorumStateStore's version-1 example, byte for byte
    assert _file(st) == b'{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}'
    assert st.read_election_state() == ElectionState(2, None, 1, DIR, (), 1)
    assert st.read_quorum_state() == (2, None, 1)


def test_awaiting_leader_survives_both_versions() -> None:
    for version in (0, 1):
        st = _storage()
        st.write_quorum_state(3, None, None, (1,), awaiting_leader=True, kraft_version=version)
        assert b'"awaitingLeader":true,"data_version"' in _file(st)
        assert st.read_quorum_state_full() == (3, None, None, True)


@pytest.mark.parametrize("content, why", [
    (b'{"leaderId":1,"leaderEpoch":2,"votedId":-1}', "data_version"),
    (b'{"leaderId":1,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"' + DIR.encode() + b'","data_version":2}',
     r"data_version \(2\) is not within"),
    (b'{"leaderId":1,"leaderEpoch":2,"votedId":-1,"data_version":1}', "votedDirectoryId"),
    (b'{"leaderId":1,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"abc","data_version":1}', "not a Uuid"),
    (b'{"leaderId":1,', "corrupt"),
])
def test_bad_file_is_named(content: bytes, why: str) -> None:
    st = _storage()
    st.fs.write_bytes(f"/q/{QUORUM_STATE_FILE}", content)
    with pytest.raises(ValueError, match=why) as info:
        st.read_election_state()
    assert str(info.value).startswith(f"/q/{QUORUM_STATE_FILE}: corrupt quorum-state file")
