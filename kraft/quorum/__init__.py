"""kraft.quorum: the KRaft metadata quorum (docs/quorum.md).

The declaration (``protocol``), the voter (``node``), its storage, invariants and projections, the
world that steps voters (``world``), the simulator plug-in (``sim``) and the story commands
(``story``)."""
