"""`evolve`: the copy `dataclasses.replace` makes, for the plain frozen records ranking copies."""

import dataclasses

import pytest

from codecompass.common.records import evolve
from codecompass.policy.ranking import RankedResult


def ranked(**fields):
    return RankedResult(**{"chunk": None, "score": 0.5, "lexical_score": 0.2, "vector_similarity": 0.1,
                           "provenance": "hybrid", "lexical_rank": 1, "semantic_rank": 3, **fields})


def test_the_copy_is_what_replace_makes_and_the_original_is_untouched():
    original = ranked(signals={"definition": 0.4})
    copy = evolve(original, score=0.9, signals={"phrase": 0.2})
    assert copy == dataclasses.replace(original, score=0.9, signals={"phrase": 0.2})
    assert type(copy) is RankedResult and copy is not original
    assert original.score == 0.5 and original.signals == {"definition": 0.4}
    with pytest.raises(dataclasses.FrozenInstanceError):
        copy.score = 0.1  # still frozen


def test_an_unknown_field_is_refused():
    with pytest.raises(TypeError, match="has no field scor"):
        evolve(ranked(), scor=0.9)


@dataclasses.dataclass(frozen=True)
class Checked:
    value: int

    def __post_init__(self):
        if self.value < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True, slots=True)
class Slotted:
    value: int


@dataclasses.dataclass(frozen=True)
class Computed:
    value: int
    double: int = dataclasses.field(init=False, default=0)


@pytest.mark.parametrize("record", [Checked(1), Slotted(1), Computed(1)], ids=["post_init", "slots", "init_false"])
def test_records_whose_init_does_more_than_assign_are_refused(record):
    with pytest.raises(TypeError, match="dataclasses.replace"):
        evolve(record, value=2)
