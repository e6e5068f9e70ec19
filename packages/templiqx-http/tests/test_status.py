"""The status rule (http.md §4): the reference's lines and codes, the port's two additions."""

from __future__ import annotations

import pytest

from templiqx_contracts import Diagnostic, OperationEnvelope
from templiqx_http import status_for, status_for_codes


@pytest.mark.parametrize(
    ("codes", "status"),
    [
        ([], 200),
        (["TQX_NOT_FOUND"], 404),
        (["TQX_CAS_CONFLICT", "TQX_NOT_FOUND"], 404),  # NOT_FOUND beats every other code
        (["TQX_CAS_CONFLICT"], 409),
        (["TQX_PATH_INVALID"], 400),
        (["TQX_DATA_INVALID"], 400),
        (["TQX_INVALID_ID"], 400),
        (["TQX_INPUT_SCHEMA_INVALID"], 400),
        (["TQX_PACKAGE_SIGNATURE_INVALID"], 400),
        (["TQX_AUTHORIZED_CONTEXT_INVALID"], 400),
        (["TQX_RUNTIME_INVALID_RESPONSE"], 400),
        (["TQX_HTTP_JSON"], 400),
        (["TQX_HTTP_IF_MATCH_REQUIRED"], 400),
        (["TQX_ARGUMENT_INVALID"], 400),
        (["TQX_UNSUPPORTED"], 501),
        (["TQX_CAPABILITY_UNSUPPORTED"], 501),
        (["TQX_RUNTIME_CAPABILITY_UNSUPPORTED"], 501),
        (["TQX_SCHEMA_KEYWORD_UNSUPPORTED"], 501),
        (["TQX_RUNTIME_TIMEOUT"], 504),
        (["TQX_RUNTIME_UNAVAILABLE"], 422),
        (["TQX_RUNTIME_RATE_LIMITED"], 422),
        (["TQX_RUNTIME_PERMANENT"], 422),
        (["TQX_IO"], 422),
        (["TQX_OUTPUT_SCHEMA"], 422),
        (["TQX_VALUE_REQUIRED"], 422),
        (["TQX_PARSE_YAML"], 422),
        (["TQX_TEST_FAILED"], 422),
        (["TQX_PACKAGE_UPDATE_EMPTY"], 422),
        (["TQX_ARGUMENT_MISSING"], 422),
        (["TQX_ARGUMENT_UNKNOWN"], 422),
        (["TQX_RUNTIME_CANCELLED"], 422),
        (["TQX_RENDER_TOO_LARGE"], 422),
        (["TQX_CONTENT_TOO_DEEP"], 422),
        (["TQX_BUSY"], 503),
        (["TQX_INTERNAL"], 500),
        (["TQX_INTERNAL", "TQX_PATH_INVALID"], 400),  # the reference's lines come first
        (["TQX_BUSY", "TQX_RUNTIME_TIMEOUT"], 504),
    ],
)
def test_status_for_codes(codes: list[str], status: int) -> None:
    assert status_for_codes(codes) == status


def test_only_errors_count_and_2xx_iff_ok() -> None:
    warning = Diagnostic(code="TQX_NOT_FOUND", severity="warning", message="w")
    ok = OperationEnvelope.build("catalog", diagnostics=[warning])
    assert ok.ok
    assert status_for(ok) == 200
    failed = OperationEnvelope.build(
        "catalog", diagnostics=[warning, Diagnostic.error("TQX_OUTPUT_SCHEMA", "x")]
    )
    assert status_for(failed) == 422


def test_every_transport_code_has_a_status_and_a_hint_and_its_status_fits_the_rule() -> None:
    from templiqx_http.codes import HTTP_CODES, HTTP_STATUS

    assert set(HTTP_CODES) == set(HTTP_STATUS)
    assert all(code.startswith("TQX_HTTP_") for code in HTTP_CODES)
    # the reference's codes keep the rule's 400; the port's own say what happened
    assert HTTP_STATUS["TQX_HTTP_JSON"] == status_for_codes(["TQX_HTTP_JSON"]) == 400
    assert HTTP_STATUS["TQX_HTTP_IF_MATCH_REQUIRED"] == 400
    assert all(status >= 400 for status in HTTP_STATUS.values())
