"""The API docs page: Swagger UI served from the package, nothing from the network."""

from __future__ import annotations

import re
from importlib import resources

from starlette.testclient import TestClient

from templiqx_http.docs_ui import ASSETS, SWAGGER_UI_VERSION


def test_the_page_and_its_assets_come_from_the_package(client: TestClient) -> None:
    redirect = client.get("/swagger-ui", follow_redirects=False)
    assert redirect.status_code == 307
    assert redirect.headers["location"] == "/swagger-ui/"
    page = client.get("/swagger-ui/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "swagger" in page.text.lower()
    assert "default-src 'self'" in page.headers["content-security-policy"]
    folder = resources.files("templiqx_http").joinpath("swagger_ui")
    for name, media in ASSETS.items():
        response = client.get(f"/swagger-ui/{name}")
        assert response.status_code == 200, name
        assert response.headers["content-type"] == media
        assert response.content == folder.joinpath(name).read_bytes()
    assert client.get("/swagger-ui/../app.py").status_code == 404
    assert client.get("/swagger-ui/missing.js").status_code == 404


def test_nothing_is_loaded_from_elsewhere() -> None:
    folder = resources.files("templiqx_http").joinpath("swagger_ui")
    page = folder.joinpath("index.html").read_text(encoding="utf-8")
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources
    assert all(not re.match(r"[a-z]+:|//", source) for source in sources), sources
    initializer = folder.joinpath("templiqx-initializer.js").read_text(encoding="utf-8")
    assert "validatorUrl: null" in initializer  # no call to the public validator service
    assert '"../operations/v1/openapi.json"' in initializer
    notice = folder.joinpath("VENDORED.md").read_text(encoding="utf-8")
    assert f"swagger-ui-dist` {SWAGGER_UI_VERSION}" in notice
    assert "Apache License" in folder.joinpath("LICENSE").read_text(encoding="utf-8")
