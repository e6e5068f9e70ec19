"""A contract's YAML source over HTTP: read it (Accept: application/yaml) and validate an edit
(a YAML body on the validate route), for editors such as the playground."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from templiqx_http import HttpSettings

DIGEST = "/operations/v1/packages/welcome/contracts/account-digest"
YAML = {"Accept": "application/yaml"}
AS_YAML = {"Content-Type": "application/yaml"}


def test_the_source_is_the_stored_text_and_its_etag_the_cas_token(
    client: TestClient, root: Path
) -> None:
    stored = (root / "welcome" / "contracts" / "account-digest.yaml").read_text(encoding="utf-8")
    answer = client.get(DIGEST, headers=YAML)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/yaml; charset=utf-8"
    assert answer.text == stored
    token = client.get(DIGEST).json()["fingerprints"]["contract"]
    assert answer.headers["etag"] == f'"{token}"'
    assert answer.headers["x-templiqx-diagnostics"] == "0"
    head = client.head(DIGEST, headers=YAML)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(stored.encode("utf-8")))
    # the reference's answer is unchanged without the header, and with JSON preferred
    assert client.get(DIGEST).json()["operation"] == "inspect_contract"
    both = client.get(DIGEST, headers={"Accept": "application/json, application/yaml"})
    assert both.json()["operation"] == "inspect_contract"


def test_a_contract_that_does_not_load_still_gives_its_text(client: TestClient, root: Path) -> None:
    digest = root / "welcome" / "contracts" / "account-digest.yaml"
    broken = digest.read_text(encoding="utf-8").replace("[trim, upper]", "[trim, uper]")
    digest.write_text(broken, encoding="utf-8")
    answer = client.get(DIGEST, headers=YAML)
    assert answer.status_code == 200
    assert answer.text == broken
    assert answer.headers["x-templiqx-diagnostics"] == "1"
    inspected = client.get(DIGEST).json()
    assert answer.headers["etag"] == f'"{inspected["fingerprints"]["contract"]}"'


def test_a_contract_that_cannot_be_read_is_the_json_envelope(client: TestClient) -> None:
    missing = client.get(DIGEST.replace("account-digest", "nope"), headers=YAML)
    assert missing.status_code == 404
    assert missing.json()["diagnostics"][0]["code"] == "TQX_NOT_FOUND"
    hostile = client.get(DIGEST.replace("account-digest", "x%20y"), headers=YAML)
    assert hostile.status_code == 400
    assert hostile.json()["diagnostics"][0]["code"] == "TQX_PATH_INVALID"


def test_an_edit_is_validated_as_the_contract_and_nothing_is_written(
    client: TestClient, root: Path
) -> None:
    digest = root / "welcome" / "contracts" / "account-digest.yaml"
    stored = digest.read_text(encoding="utf-8")
    edit = stored.replace("[trim, upper]", "[trim, uper]")
    refused = client.post(DIGEST + "/validate", content=edit, headers=AS_YAML)
    assert refused.status_code == 422
    [problem] = refused.json()["diagnostics"]
    assert problem["code"] == "TQX_PARSE_UNKNOWN_FILTER"
    assert problem["span"]["line"] == 25
    assert problem["file"] == "welcome/contracts/account-digest.yaml"
    fine = client.post(
        DIGEST + "/validate", content=stored.replace("0.3.0", "0.4.0"), headers=AS_YAML
    )
    assert fine.status_code == 200
    assert fine.json()["result"]["version"] == "0.4.0"
    assert digest.read_text(encoding="utf-8") == stored  # nothing written
    # the saved contract is what the route validates without a YAML body
    assert client.post(DIGEST + "/validate").json()["result"]["version"] == "0.3.0"
    # an edit of a contract with includes resolves them in the package
    summary = root / "welcome" / "contracts" / "onboarding-summary.yaml"
    path = "/operations/v1/packages/welcome/contracts/onboarding-summary/validate"
    assert client.post(path, content=summary.read_bytes(), headers=AS_YAML).json()["ok"] is True


def test_a_bad_edit_body_is_a_transport_error(client_for: type) -> None:
    client = client_for(HttpSettings(max_body_bytes=64))
    not_text = client.post(DIGEST + "/validate", content=b"\xff\xfe", headers=AS_YAML)
    assert not_text.status_code == 400
    assert not_text.json()["diagnostics"][0]["code"] == "TQX_HTTP_JSON"
    large = client.post(DIGEST + "/validate", content=b"x" * 65, headers=AS_YAML)
    assert large.status_code == 413


def test_both_need_the_token(client_for: type) -> None:
    client = client_for(HttpSettings(token="s3cret"))
    assert client.get(DIGEST, headers=YAML).status_code == 401
    assert client.post(DIGEST + "/validate", content="x: 1", headers=AS_YAML).status_code == 401
    bearer = {"Authorization": "Bearer s3cret"}
    assert client.get(DIGEST, headers={**YAML, **bearer}).status_code == 200
