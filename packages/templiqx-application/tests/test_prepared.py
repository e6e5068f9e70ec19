"""Prepared contracts: a kept load gives byte-identical envelopes and never hides an edit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_application import TempliqxService
from templiqx_application.prepared import ContractCache, ReadRecorder
from templiqx_local import compose

WELCOME = Path(__file__).resolve().parents[3] / "fixtures" / "packages" / "welcome"
VALUES = json.loads((WELCOME / "scenarios" / "stream-vip" / "request.json").read_text("utf-8"))
OUTPUT = json.loads(
    (Path(__file__).resolve().parents[3] / "fixtures" / "cli" / "vip-output.json").read_text(
        "utf-8"
    )
)
CALL: dict[str, Any] = {
    "package": "welcome",
    "contract": "onboarding-summary",
    "fixture_output": OUTPUT,
    **VALUES,
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(WELCOME, tmp_path / "welcome")
    return tmp_path


def _bytes(service: TempliqxService, **extra: Any) -> bytes:
    return msgspec.json.encode(service.execute_contract(**CALL, **extra).to_builtins())


def _rendered(service: TempliqxService) -> str:
    given = {k: v for k, v in CALL.items() if k != "fixture_output"}
    envelope = service.render_contract(**given, capabilities=["structured_output"])
    assert envelope.ok, envelope.diagnostics
    return json.dumps(envelope.to_builtins()["result"])


def test_a_kept_load_gives_byte_identical_envelopes(root: Path) -> None:
    service = compose(str(root))
    first = _bytes(service)
    loader = service._ctx.loader
    assert len(loader.cache) == 1, "the load was kept"
    again = _bytes(service)
    fresh = _bytes(compose(str(root)))
    assert first == again == fresh
    assert json.loads(first)["ok"] is True


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        ("contracts/onboarding-summary.yaml", "Starts: ", "CONTRACT-EDITED: "),
        ("partials/house-style.yaml", "onboarding assistant", "PARTIAL-EDITED assistant"),
        ("translations/nl.yaml", "Hoge prioriteit", "TRANSLATION-EDITED"),
    ],
)
def test_an_edited_file_is_picked_up_by_the_next_call(
    root: Path, path: str, old: str, new: str
) -> None:
    service = compose(str(root))
    before = _rendered(service)
    assert new not in before
    file = root / "welcome" / path
    text = file.read_text("utf-8")
    assert old in text
    file.write_text(text.replace(old, new, 1), "utf-8")
    after = _rendered(service)
    assert after != before
    assert after == _rendered(compose(str(root))), "the same as a service that never cached"


def test_an_edited_manifest_is_picked_up(root: Path) -> None:
    service = compose(str(root))
    assert service.execute_contract(**CALL).ok
    manifest = root / "welcome" / "templiqx.yaml"
    manifest.write_text(manifest.read_text("utf-8") + "\nunknown_field: 1\n", "utf-8")
    edited = service.execute_contract(**CALL)
    assert edited == compose(str(root)).execute_contract(**CALL)


def test_a_deleted_partial_fails_instead_of_using_the_kept_load(root: Path) -> None:
    service = compose(str(root))
    assert service.execute_contract(**CALL).ok
    (root / "welcome" / "partials" / "house-style.yaml").unlink()
    broken = service.execute_contract(**CALL)
    assert not broken.ok
    assert broken == compose(str(root)).execute_contract(**CALL)


def test_the_cache_is_bounded_in_entries_and_bytes(root: Path) -> None:
    service = compose(str(root))
    loaded = service._ctx.loader.load("welcome", "onboarding-summary")
    manifest = loaded.manifest
    assert manifest is not None
    assert loaded.source is not None
    store = service._ctx.store
    cache = ContractCache(store, max_entries=1)
    cache.put(loaded, loaded.source, manifest, ReadRecorder(store))
    other = service._ctx.loader.load("welcome", "account-digest")
    assert other.source is not None
    cache.put(other, other.source, manifest, ReadRecorder(store))
    assert len(cache) == 1
    assert cache.get("welcome", "onboarding-summary", loaded.source, manifest) is None
    tiny = ContractCache(store, max_bytes=10)
    tiny.put(loaded, loaded.source, manifest, ReadRecorder(store))
    assert len(tiny) == 0, "a load heavier than the bound is not kept"


def test_a_source_with_a_lone_surrogate_is_refused_not_crashed_on(root: Path) -> None:
    """The cache's identity of a text must not raise on a text the reader then refuses."""
    service = compose(str(root))
    assert service.validate_contract("welcome", "onboarding-summary").ok  # a kept load
    refused = service.put_contract("welcome", "onboarding-summary", 'id: x\n"\ud800": 1\n')
    assert [d.code for d in refused.diagnostics] == ["TQX_PARSE_YAML"]
