"""The playground page and the home page: served from the package, nothing from elsewhere."""

from __future__ import annotations

import re
from importlib import resources

from starlette.testclient import TestClient

from templiqx_http.playground_ui import PLAYGROUND_ASSETS

FOLDER = resources.files("templiqx_http").joinpath("playground")


def _files() -> set[str]:
    found: set[str] = set()
    for entry in FOLDER.iterdir():
        if entry.is_file():
            found.add(entry.name)
        else:
            found.update(f"{entry.name}/{inner.name}" for inner in entry.iterdir())
    return found


def test_every_file_of_the_folder_is_served_and_nothing_else(client: TestClient) -> None:
    assert set(PLAYGROUND_ASSETS) == _files()
    redirect = client.get("/playground", follow_redirects=False)
    assert redirect.status_code == 307
    assert redirect.headers["location"] == "/playground/"
    page = client.get("/playground/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for name in PLAYGROUND_ASSETS:
        answer = client.get(f"/playground/{name}")
        assert answer.status_code == 200, name
        assert answer.content == FOLDER.joinpath(*name.split("/")).read_bytes()
    assert client.get("/playground/js/missing.js").status_code == 404
    assert client.get("/playground/../app.py").status_code == 404


def test_the_page_loads_nothing_from_another_origin() -> None:
    for name in PLAYGROUND_ASSETS:
        text = FOLDER.joinpath(*name.split("/")).read_text(encoding="utf-8")
        assert not re.search(r"""(?:src|href)=["'](?:[a-z]+:|//)""", text), name
        assert not re.search(r"""\bfrom\s+["'](?:[a-z]+:|//)""", text), name
        # the token lives in the tab's memory: nothing is ever stored
        assert not re.search(r"localStorage|sessionStorage|document\.cookie|indexedDB", text), name


def test_the_scripts_import_only_files_that_are_served() -> None:
    for name in PLAYGROUND_ASSETS:
        if not name.endswith(".js"):
            continue
        text = FOLDER.joinpath(*name.split("/")).read_text(encoding="utf-8")
        for target in re.findall(r"""from\s+["']\./([\w.-]+)["']""", text):
            assert f"js/{target}" in PLAYGROUND_ASSETS, (name, target)


def test_the_home_page_links_to_the_playground_and_the_docs(client: TestClient) -> None:
    home = client.get("/")
    assert home.status_code == 200
    assert 'href="playground/"' in home.text
    assert 'href="swagger-ui/"' in home.text
    assert client.head("/").status_code == 200


def test_a_host_may_leave_the_playground_out(client_for: type) -> None:
    client = client_for(playground=False)
    assert client.get("/").status_code == 404
    assert client.get("/playground/").status_code == 404
    assert client.get("/operations/v1/catalog").status_code == 200
