"""contract_text and validate_contract_source: what an editor reads and checks before a save."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from templiqx_application import TempliqxService

WELCOME = Path(__file__).resolve().parents[3] / "fixtures" / "packages" / "welcome"


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "packages"
    shutil.copytree(WELCOME, root / "welcome")
    return root


def test_the_text_comes_with_inspect_contracts_envelope(
    tmp_path: Path, make_service: Callable[..., TempliqxService]
) -> None:
    root = _root(tmp_path)
    service = make_service(root)
    path = root / "welcome" / "contracts" / "account-digest.yaml"
    envelope, text = service.contract_text("welcome", "account-digest")
    assert text == path.read_text(encoding="utf-8")
    assert envelope == service.inspect_contract("welcome", "account-digest")
    path.write_text(text.replace("[trim, upper]", "[trim, uper]"), encoding="utf-8")
    envelope, broken = service.contract_text("welcome", "account-digest")
    assert broken is not None
    assert "uper]" in broken
    assert [d.code for d in envelope.diagnostics] == ["TQX_PARSE_UNKNOWN_FILTER"]
    assert envelope.fingerprints["contract"]  # the token a repair sends back
    missing, none = service.contract_text("welcome", "nope")
    assert none is None
    assert missing.diagnostics[0].code == "TQX_NOT_FOUND"
    refused, nothing = service.contract_text("welcome", "x y")
    assert nothing is None
    assert refused.diagnostics[0].code == "TQX_PATH_INVALID"


def test_an_edit_is_validated_as_the_saved_contract_would_be(
    tmp_path: Path, make_service: Callable[..., TempliqxService]
) -> None:
    root = _root(tmp_path)
    service = make_service(root)
    path = root / "welcome" / "contracts" / "onboarding-summary.yaml"
    stored = path.read_text(encoding="utf-8")
    same = service.validate_contract_source("welcome", "onboarding-summary", stored)
    assert same == service.validate_contract("welcome", "onboarding-summary")
    bad = service.validate_contract_source(
        "welcome", "onboarding-summary", stored.replace("filters: [format_date]", "filters: [date]")
    )
    assert not bad.ok
    assert bad.diagnostics[0].span is not None
    assert bad.diagnostics[0].file == "welcome/contracts/onboarding-summary.yaml"
    renamed = service.validate_contract_source(
        "welcome", "onboarding-summary", stored.replace("id: onboarding-summary", "id: other")
    )
    assert "TQX_CONTRACT_INVENTORY_ID" in [d.code for d in renamed.diagnostics]
    assert path.read_text(encoding="utf-8") == stored  # nothing written
