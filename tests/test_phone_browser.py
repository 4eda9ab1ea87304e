"""The app on a 390 px phone in headless Chromium: nothing wider than the screen unless it scrolls inside its own
box (formulas, tables and code included), plotly's toolbar never over a figure, and Home's class plan in Chinese
staying Chinese in the same tab."""

from __future__ import annotations

import pytest

from benchmarks.harness import browser, chromium_available, streamlit_server, wait_for_app_idle
from ui.language import URL_KEY
from ui.lesson import PART_KEY, WHOLE_PAGE
from ui.pages import available_pages
from ui.stylesheet import HIDDEN_KEY_PREFIX

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not chromium_available(), reason="Chromium is not installed (apt install chromium)"),
]

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True,
         "user_agent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
                       "Chrome/126.0 Mobile Safari/537.36"}

# Every element of the page (not the folded sidebar, nor what is hidden on purpose) that reaches past the screen's
# edges, unless a box between it and Streamlit's layout scrolls sideways and itself fits on the screen.
WIDE_ELEMENTS_JS = r"""() => {
  const width = document.documentElement.clientWidth;
  const layout = new Set(['stMain', 'stMainBlockContainer', 'stAppViewContainer', 'stApp', 'stVerticalBlock',
                          'stHorizontalBlock', 'stColumn', 'stLayoutWrapper', 'stBottom']);
  const fits = (box) => { const r = box.getBoundingClientRect(); return r.left >= -1 && r.right <= width + 1; };
  const scrolls = (box) => ['auto', 'scroll'].includes(getComputedStyle(box).overflowX);
  const wide = [];
  // clipped on purpose to nothing: a slider's native input, KaTeX's MathML for screen readers
  const visuallyHidden = (box) => { const s = getComputedStyle(box); return s.clip !== 'auto' || s.clipPath !== 'none'; };
  for (const element of document.querySelectorAll('[data-testid="stMain"] *')) {
    // Streamlit's hover toolbar of a table or chart is not the page's content
    if (element.closest('[data-testid="stElementToolbar"]')) continue;
    const rect = element.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0 || (rect.left >= -1 && rect.right <= width + 1)) continue;
    const style = getComputedStyle(element);
    if (style.visibility === 'hidden' || style.opacity === '0') continue;
    let box = element, inside = false;
    while (box && !layout.has(box.dataset.testid || '')) {
      if (visuallyHidden(box) || (box !== element && scrolls(box) && fits(box))) { inside = true; break; }
      box = box.parentElement;
    }
    if (inside) continue;
    const container = element.closest('[data-testid]');
    wide.push(`${container ? container.dataset.testid : ''} ${element.tagName}.${element.getAttribute('class') || ''}`
              + ` [${Math.round(rect.left)}, ${Math.round(rect.right)}]: ${(element.textContent || '').slice(0, 60)}`);
  }
  return wide;
}"""

# Whether plotly's toolbar of any chart is shown.
TOOLBARS_SHOWN_JS = """() => Array.from(document.querySelectorAll('.modebar-container'))
  .filter(bar => getComputedStyle(bar).display !== 'none').length"""


@pytest.fixture(scope="module")
def phone():
    with streamlit_server() as (base_url, _), browser() as chromium:
        context = chromium.new_context(**PHONE)
        try:
            yield base_url, context
        finally:
            context.close()


def open_on_phone(context, url: str):
    """A new tab at ``url`` once the app is idle and its stylesheet (``ui.stylesheet``) is on the page."""
    page = context.new_page()
    page.goto(url)
    wait_for_app_idle(page, 120_000)
    page.wait_for_function("""() => Array.from(document.querySelectorAll('style'))
      .some(sheet => sheet.textContent.includes('MARKER'))""".replace("MARKER", HIDDEN_KEY_PREFIX))
    return page


def scroll_through(page) -> None:
    """Scroll the page to its end and back, so every chart near the screen at some point is drawn."""
    page.evaluate("""async () => {
      const main = document.querySelector('[data-testid="stMain"]');
      for (let top = 0; top < main.scrollHeight; top += main.clientHeight) {
        main.scrollTo(0, top); await new Promise(r => setTimeout(r, 150));
      }
      main.scrollTo(0, 0);
    }""")


@pytest.mark.parametrize("info", available_pages(), ids=[p.url_path or "home" for p in available_pages()])
def test_nothing_on_a_phone_is_wider_than_the_screen_unless_it_scrolls_in_its_own_box(phone, info):
    base_url, context = phone
    page = open_on_phone(context, f"{base_url}/{info.url_path}?{PART_KEY}={WHOLE_PAGE}")
    try:
        scroll_through(page)
        wide = page.evaluate(WIDE_ELEMENTS_JS)
        assert not wide, "\n".join(wide[:20])
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.evaluate(TOOLBARS_SHOWN_JS) == 0
    finally:
        page.close()


def test_display_formulas_wrap_on_a_phone(phone):
    """The β-base page's long display formulas break after a relation instead of running off the screen."""
    base_url, context = phone
    page = open_on_phone(context, f"{base_url}/beta_base?{PART_KEY}={WHOLE_PAGE}")
    try:
        page.wait_for_selector(".katex-display")
        widths = page.evaluate("""() => Array.from(document.querySelectorAll('.katex-display'))
          .map(f => [f.scrollWidth, f.clientWidth, f.getBoundingClientRect().height])""")
        assert len(widths) >= 5
        assert all(scrolled <= shown + 1 for scrolled, shown, _ in widths), widths
        assert any(height > 60 for *_, height in widths)  # at least one formula takes two lines
    finally:
        page.close()


def test_a_numbered_lists_two_digit_numbers_stay_inside_the_box_that_clips_them(phone):
    """On a phone a text box scrolls sideways and so clips what hangs outside it: the References' list keeps the
    room for "12." inside its box (it showed ".2")."""
    base_url, context = phone
    page = open_on_phone(context, f"{base_url}/references")
    try:
        room = page.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"] ol'))
          .filter(list => list.children.length >= 10).map(list => {
            const item = list.children[9], probe = document.createElement('span');
            probe.textContent = '10.\u00a0'; probe.style.font = getComputedStyle(item).font;
            document.body.appendChild(probe);
            const marker = probe.getBoundingClientRect().width; probe.remove();
            const box = list.closest('[data-testid="stMarkdownContainer"]').getBoundingClientRect().left;
            return item.getBoundingClientRect().left - box - marker; })""")
        assert room and all(space >= 0 for space in room), room
    finally:
        page.close()


def test_the_class_plan_opens_its_pages_in_the_same_tab_in_chinese(phone):
    base_url, context = phone
    page = open_on_phone(context, f"{base_url}/?{URL_KEY}=zh")
    try:
        tabs = len(context.pages)
        link = page.locator('[data-testid="stExpander"] [data-testid="stPageLink-NavLink"]').nth(1)
        target = link.get_attribute("href")
        assert f"{URL_KEY}=zh" in target
        link.click()
        page.wait_for_url(f"**/{target}")
        wait_for_app_idle(page, 120_000)
        assert len(context.pages) == tabs  # no new tab
        assert f"{URL_KEY}=zh" in page.url
        assert "热力图" in page.locator("h1").first.inner_text()  # the θ heatmaps page, in Chinese
    finally:
        page.close()
