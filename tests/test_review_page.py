"""The review page in a real headless Chromium: sign in, open a candidate, see the gate report
and the lineage graph, approve, and see recall switch. Also its CSRF and sign-in guards."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest

from memlineage import Memory
from test_http import EVENTS, Service, service_on

CHROMIUM = shutil.which("chromium")


@pytest.fixture
def shadow_service(db_url: str) -> Service:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS)
        memory.release_mode("shadow")
        assert memory.consolidate("user-7").awaiting_review
    with service_on(db_url) as service:
        yield service  # type: ignore[misc]


def artifacts_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("MEMLINEAGE_TEST_ARTIFACTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on this machine (apt-get install chromium)"
)
def test_review_and_approve_in_a_browser(shadow_service: Service, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page()
        page.goto(f"{shadow_service.url}/review")
        assert "/review/login" in page.url
        page.fill("input[name=key]", shadow_service.keys["acme"])
        page.fill("input[name=reviewer]", "Ana Reviewer")
        page.click("button[type=submit]")
        page.click("#pending a")
        assert page.inner_text("#gate-verdict") == "passed"
        assert "Never deploy on Fridays." in page.inner_text("#candidate")
        assert page.locator("#lineage svg .event").count() == 3
        assert page.locator("#must-preserve .lost").count() == 0
        page.screenshot(path=str(artifacts_dir(tmp_path) / "review-candidate.png"), full_page=True)
        page.fill("textarea[name=reason]", "all constraints kept")
        page.click("#approve")
        assert "approved" in page.inner_text("#decision")
        browser.close()
    with Memory(shadow_service.db, tenant="acme") as memory:
        assert memory.recall("user-7").mode == "summary"
        [decided] = memory.reviews(None)
        assert decided["reviewer"] == "Ana Reviewer" and decided["reason"] == "all constraints kept"


def test_a_forged_form_is_refused_and_changes_nothing(shadow_service: Service) -> None:
    with Memory(shadow_service.db, tenant="acme") as memory:
        [pending] = memory.reviews()
    with httpx.Client(base_url=shadow_service.url, follow_redirects=False) as http:
        login = http.post(
            "/review/login", data={"key": shadow_service.keys["acme"], "reviewer": "eve"}
        )
        assert login.status_code == 303
        forged = http.post(
            f"/review/{pending['artifact_id']}/decide",
            data={"action": "approve", "csrf": "0" * 64, "reason": ""},
        )
        assert forged.status_code == 403
    with httpx.Client(base_url=shadow_service.url, follow_redirects=False) as anonymous:
        assert anonymous.get("/review").status_code == 303
        bad = anonymous.post("/review/login", data={"key": "mlk_x_y", "reviewer": "eve"})
        assert bad.status_code == 401
    with Memory(shadow_service.db, tenant="acme") as memory:
        assert memory.recall("user-7").mode == "raw"
        assert [r["state"] for r in memory.reviews(None)] == ["pending"]


def test_another_tenants_key_sees_nothing_of_this_queue(shadow_service: Service) -> None:
    with Memory(shadow_service.db, tenant="acme") as memory:
        [pending] = memory.reviews()
    with httpx.Client(base_url=shadow_service.url, follow_redirects=True) as http:
        http.post("/review/login", data={"key": shadow_service.keys["other"], "reviewer": "eve"})
        assert pending["artifact_id"] not in http.get("/review").text
        page = http.get(f"/review/{pending['artifact_id']}/show")
        assert page.status_code == 404


def published_then_shadow(memory: Memory) -> None:
    """A published summary of user-7, then shadow mode and one more event."""
    memory.add(EVENTS)
    assert memory.consolidate("user-7").switched
    memory.release_mode("shadow")
    memory.add([{"id": "m-4", "subject": "user-7", "text": "The budget is 4,500 EUR."}])


@pytest.fixture
def stale_published(db_url: str) -> Service:
    """A published summary made stale by a revocation, and a pending candidate after it."""
    with Memory(db_url, tenant="acme") as memory:
        published_then_shadow(memory)
        memory.revoke("m-2")
        assert memory.consolidate("user-7").awaiting_review
    with service_on(db_url) as service:
        yield service  # type: ignore[misc]


@pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on this machine (apt-get install chromium)"
)
def test_a_stale_published_summary_is_marked_and_the_candidate_shown_as_a_diff(
    stale_published: Service, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page()
        page.goto(f"{stale_published.url}/review/login")
        page.fill("input[name=key]", stale_published.keys["acme"])
        page.fill("input[name=reviewer]", "Ana Reviewer")
        page.click("button[type=submit]")
        page.click("#pending a")
        marker = page.locator("#published-stale")
        assert marker.is_visible()
        assert marker.inner_text().startswith("Stale: status stale; recall no longer serves it")
        added = page.locator("#diff .added").all_inner_texts()
        removed = page.locator("#diff .removed").all_inner_texts()
        assert "+ - The budget is 4,500 EUR." in added
        assert "- - I love jazz." in removed
        assert "  - Never deploy on Fridays." in page.locator("#diff .same").all_inner_texts()
        page.screenshot(path=str(artifacts_dir(tmp_path) / "review-diff.png"), full_page=True)
        browser.close()


def test_a_fresh_published_summary_is_not_marked_stale(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        published_then_shadow(memory)
        candidate = memory.consolidate("user-7", force=True)
        assert candidate.awaiting_review
    with service_on(db_url) as service, httpx.Client(base_url=service.url) as http:
        http.post("/review/login", data={"key": service.keys["acme"], "reviewer": "ana"})
        page = http.get(f"/review/{candidate.artifact.id}/show", follow_redirects=True).text
    assert 'id="published-stale"' not in page
    assert '<span class="added">+ - The budget is 4,500 EUR.</span>' in page
