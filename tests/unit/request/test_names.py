"""The one rule for a uuid in a request, and how host names compare."""
import pytest

from scheduler import exception
from scheduler.request.names import canonical_uuid
from scheduler.request.names import host_key
from scheduler.request.names import is_uuid

U = "aaaaaaaa-0000-4000-8000-00000000000b"
HEX = U.replace("-", "")

#: What select_destinations never took, though ``uuid.UUID`` does.
NOT_UUIDS = ["{" + HEX + "}", "{" + U + "}", "urn:uuid:" + U, "urn:" + HEX,
             "uuid:" + HEX, HEX[:4] + "-" + HEX[4:], U + "\n", " " + U,
             HEX[:31], HEX + "0", "g" * 32, "", None, 7, [U]]


@pytest.mark.parametrize("written", [U, U.upper(), HEX, HEX.upper(),
                                     U[:8] + U[9:]])
def test_a_uuid_in_any_case_with_or_without_dashes_is_canonical(written):
    assert is_uuid(written)
    assert canonical_uuid(written, "f") == U


@pytest.mark.parametrize("value", NOT_UUIDS)
def test_braces_urns_and_stray_dashes_are_not_uuids(value):
    assert not is_uuid(value)
    with pytest.raises(exception.InvalidRequest) as e:
        canonical_uuid(value, "consumer_uuids.0")
    assert e.value.message == (
        f"consumer_uuids.0: {str(value)[:60]!r} is not a uuid")


def test_host_names_compare_without_case():
    assert host_key("Compute-1.Example") == "compute-1.example"
