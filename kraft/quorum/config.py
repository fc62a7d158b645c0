"""Configuration and roles of a KRaft voter.

The bug-variant flags are named exactly like the CONSTANTS of ``spec/KRaft.tla`` (contract section 1/2),
so a grep for ``VoteWithoutLogCheck`` finds both sides; their documentation and the invariant each
breaks are in the declaration, ``kraft.quorum.protocol``.  The default is always the correct protocol.
"""

from __future__ import annotations

import enum

import attrs

class Role(enum.Enum):
    """``role[n]`` of the spec; values are the spec's strings."""

    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


def _positive(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be > 0, got {value}")


@attrs.frozen
class QuorumConfig:
    """Timeouts (virtual milliseconds) and protocol variant flags.

    Defaults follow Kafka: ``quorum.election.timeout.ms`` = 1000, ``quorum.fetch.timeout.ms`` = 2000,
    check-quorum after 1.5 x fetch timeout (``LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR``).
    """

    election_timeout_ms: int = attrs.field(default=1000, validator=_positive)
    fetch_timeout_ms: int = attrs.field(default=2000, validator=_positive)
    check_quorum_timeout_ms: int = attrs.field(default=3000, validator=_positive)
    request_timeout_ms: int = attrs.field(default=500, validator=_positive)
    begin_quorum_epoch_retry_ms: int = attrs.field(default=1000, validator=_positive)
    fetch_interval_ms: int = attrs.field(default=50, validator=_positive)
    flush_delay_ms: int = attrs.field(default=5, validator=_positive)
    # None: a fetch response carries every entry from the fetch offset to the log end.
    max_fetch_entries: int | None = None
    # the finalized kraft.version: 0 static voters (no voter change accepted), 1 dynamic (KIP-853)
    kraft_version: int = 1
    PreVote: bool = True
    VoteWithoutLogCheck: bool = False
    HwmFromAnyEpoch: bool = False
    NoTruncateOnDivergence: bool = False
    ForgetVoteOnRestart: bool = False
    SnapshotBeyondHighWatermark: bool = False
    KeepSuffixAfterSnapshotInstall: bool = False
    RetentionDeletesPastSnapshot: bool = False
    NoSnapshotRedirectBelowLogStart: bool = False
    VoterChangeBeforeEpochCommit: bool = False
    ConcurrentVoterChange: bool = False
    LeaderCountsSelfWhenRemoved: bool = False
    ObserverSkipsFsync: bool = False
    IgnoreDirectoryIdInVote: bool = False

    def with_variant(self, name: str | None) -> "QuorumConfig":
        """Return a copy with the named variant flag switched on (``None``: unchanged; ``PreVote``
        toggles the pre-vote feature)."""
        if name is None:
            return self
        if name == "PreVote":
            return attrs.evolve(self, PreVote=not self.PreVote)
        if name not in VARIANT_FLAGS:
            raise ValueError(f"unknown KRaft variant {name!r}; known: {', '.join(VARIANT_FLAGS)}")
        return attrs.evolve(self, **{name: True})

    def variant_names(self) -> list[str]:
        return [v for v in VARIANT_FLAGS if getattr(self, v)]


# the bug-variant flags: the boolean fields named like the spec's CONSTANTS, but the PreVote feature
VARIANT_FLAGS = tuple(f.name for f in attrs.fields(QuorumConfig) if f.name[0].isupper() and f.name != "PreVote")
