"""The vote's fast check of its body agrees with VoteRequestSerializer, which answers everything else."""

from hypothesis import given, settings
from hypothesis import strategies as st

from collection.serializers import VoteRequestSerializer, vote_request_valid
from common.serializers import MAX_DATABASE_ID

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
ASSIGNMENTS = st.integers(min_value=-5, max_value=MAX_DATABASE_ID + 5) | ANY_JSON
CHOICES = st.sampled_from(["left", "right", "tie", "LEFT", "", "both"]) | ANY_JSON
RESPONSE_MS = st.integers(min_value=-5, max_value=10**7) | st.none() | ANY_JSON


@st.composite
def vote_bodies(draw):
    body = {}
    for name, values in (
        ("assignment", ASSIGNMENTS),
        ("choice", CHOICES),
        ("client_response_ms", RESPONSE_MS),
    ):
        if draw(st.integers(0, 5)) > 0:  # mostly present, sometimes missing
            body[name] = draw(values)
    if draw(st.booleans()):
        body[draw(st.text(max_size=6))] = draw(ANY_JSON)  # a field nobody asked for
    return body


@settings(max_examples=600, deadline=None)
@given(vote_bodies())
def test_what_the_fast_check_accepts_the_serializer_accepts_with_the_same_data(body):
    fast = vote_request_valid(body)
    serializer = VoteRequestSerializer(data=body)
    if fast is not None:
        assert serializer.is_valid(), serializer.errors
        assert fast == dict(serializer.validated_data)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=MAX_DATABASE_ID),
    st.sampled_from(["left", "right", "tie"]),
    st.none() | st.integers(min_value=0, max_value=10**7),
    st.booleans(),
)
def test_every_well_formed_vote_takes_the_fast_path(assignment, choice, response_ms, with_ms):
    body = {"assignment": assignment, "choice": choice}
    if with_ms:
        body["client_response_ms"] = response_ms
    serializer = VoteRequestSerializer(data=body)
    assert serializer.is_valid(), serializer.errors
    assert vote_request_valid(body) == dict(serializer.validated_data)


def test_what_the_fast_check_passes_on_keeps_the_serializers_messages():
    # A bool is not a number to the schema; a string id is not an id: both go to the serializer.
    for body in ({"assignment": True, "choice": "left"}, {"assignment": "7", "choice": "left"}):
        assert vote_request_valid(body) is None
        assert VoteRequestSerializer(data=body).is_valid() is False
    assert vote_request_valid({"assignment": 7, "choice": "up"}) is None
    errors = VoteRequestSerializer(data={"assignment": 7, "choice": "up"})
    assert errors.is_valid() is False
    assert "is not a choice" in str(errors.errors["choice"][0])
