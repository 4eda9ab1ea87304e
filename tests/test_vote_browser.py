"""A class votes, in headless Chromium: a presenter and three phones in separate browser contexts (each its own
cookies and session, as separate devices are). The votes appear in the presenter's count, the reveal shows the
tally on the projector and on the phones, and a closed room refuses."""

from __future__ import annotations

import re

import pytest

from benchmarks.harness import browser, chromium_available, page_errors, streamlit_server, wait_for_app_idle

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # about 30 s on a busy 2-core machine, a third of it the presenter's first page (torch)
    pytest.mark.skipif(not chromium_available(), reason="Chromium is not installed (apt install chromium)"),
]
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def test_three_phones_vote_the_presenter_sees_the_tally_and_a_closed_room_refuses(tmp_path):
    # the server draws the reveal's live chart instead of exporting the slide through a second browser (what the
    # vote shows is the same; tests/test_tour_browser.py tries the slides)
    env = {"PE_EXPLORER_WARMUP": "0", "PE_RUN_STORE": str(tmp_path / "runs.sqlite3"), "BROWSER_PATH": "no-browser"}
    with streamlit_server(env=env) as (url, _), browser() as chromium:
        presenter = chromium.new_context(viewport={"width": 1280, "height": 720}).new_page()
        presenter.goto(f"{url}/tour?step=2&present=1")
        presenter.locator(".st-key-vote_open button").first.click(timeout=90_000)
        panel = presenter.locator(".st-key-vote_room_panel")
        panel.locator("img").wait_for(timeout=60_000)  # the QR code
        code = re.search(r"/vote\?room=([A-Z0-9]{5})", panel.inner_text()).group(1)
        phones = [chromium.new_context(**PHONE).new_page() for _ in range(3)]
        picks = [1, 1, 0]  # step 2's answer is its second choice
        for phone, pick in zip(phones, picks, strict=True):
            phone.goto(f"{url}/vote?room={code}")
            phone.locator(f".st-key-vote_1_{pick} button").first.click(timeout=60_000)
        for phone in phones:
            phone.get_by_text("You can change it until the reveal").wait_for(timeout=30_000)
        assert "**" not in phones[0].inner_text("body") and phones[0].locator("svg.main-svg").count() == 0
        presenter.get_by_text("3 voted on this question").wait_for(timeout=10_000)  # the live count, no reload
        presenter.keyboard.press("ArrowRight")  # reveal
        tally = presenter.locator(".st-key-vote_tally")
        tally.wait_for(timeout=90_000)
        text = tally.inner_text()
        assert "The class voted (3):" in text and re.search(r"✓ Most, but not the slowest: 2 \(67 %\)", text), text
        phones[0].get_by_text("Right:").wait_for(timeout=10_000)  # the phone follows the reveal by itself
        phones[2].get_by_text("Not quite").wait_for(timeout=10_000)
        presenter.keyboard.press("ArrowRight")  # step 3: the phones follow
        phones[1].locator(".st-key-vote_2_0 button").first.wait_for(timeout=30_000)
        presenter.locator(".st-key-vote_close button").first.click(timeout=90_000)
        presenter.get_by_text(f"Room {code} is closed").wait_for(timeout=30_000)
        phones[1].get_by_text(f"Room {code} is closed").wait_for(timeout=10_000)
        assert phones[1].locator(".st-key-vote_2_0").count() == 0  # nothing left to vote with
        wait_for_app_idle(presenter)
        assert page_errors(presenter) == [] and all(page_errors(phone) == [] for phone in phones)
