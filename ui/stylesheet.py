"""The app's own CSS, in one stylesheet every page draws first, the same on every run.

A ``<style>`` element added to a page makes the browser work out the style of every element again. Each number
table carried its rules, so a move that changed a table added them again with it: three a move on the
RoPE-in-code page, about 10 ms of the 158 ms the browser's main thread spent on each move (Chromium's own count).
A sheet that is the same on every run is left alone by Streamlit, so the browser adds it once a page. The rule
that hides the app's hidden containers is here too, beside the rest of the app's CSS.
"""

from __future__ import annotations

import streamlit as st

from ui.table import TABLE_CSS

# A container keyed with this prefix runs its widgets (they keep their values and URL parameters) but is not shown.
HIDDEN_KEY_PREFIX = "pe-hidden-"
# A container keyed with this prefix (keyboard hints) is not shown on a touch screen without a fine pointer.
KEYBOARD_ONLY_PREFIX = "pe-keys-"

# Widths at most this (CSS pixels) are a phone's: a 390 px phone, or a narrow window.
NARROW_WIDTH_PX = 640

# On a phone nothing is cut off at the edge of the screen: it wraps, or it scrolls inside its own box.
PHONE_CSS = f"""/* A display formula breaks after a relation or an operator where the line is too narrow (KaTeX sets each
   breakable part of it as a box of its own); a part that cannot break scrolls inside the formula's box. */
.katex-display > .katex {{white-space: normal}}
.katex-display {{overflow-x: auto; overflow-y: hidden}}
/* A formula wider than its box shows a shadow at the edge it continues past (the covers scroll with the formula
   and hide a shadow at an end that is reached; with nothing to scroll there is no shadow). */
.katex-display {{background:
  linear-gradient(to right, white 30%, rgba(255, 255, 255, 0)) left center / 2.5rem 100% no-repeat local,
  linear-gradient(to left, white 30%, rgba(255, 255, 255, 0)) right center / 2.5rem 100% no-repeat local,
  radial-gradient(farthest-side at 0 50%, rgba(0, 0, 0, 0.22), rgba(0, 0, 0, 0)) left center / 0.8rem 100% no-repeat scroll,
  radial-gradient(farthest-side at 100% 50%, rgba(0, 0, 0, 0.22), rgba(0, 0, 0, 0)) right center / 0.8rem 100% no-repeat scroll}}
/* Markdown tables and code blocks scroll inside their own box. */
[data-testid="stMarkdownContainer"] table {{display: block; max-width: 100%; overflow-x: auto}}
[data-testid="stMarkdownContainer"] pre, [data-testid="stCode"] pre {{max-width: 100%; overflow-x: auto}}
/* A long link (an address, a code name) breaks anywhere rather than running off the screen. */
[data-testid="stMarkdownContainer"] a, [data-testid="stCaptionContainer"] a {{overflow-wrap: anywhere}}
/* A page link's label wraps instead of ending in an ellipsis, in the page and in the sidebar's list of pages. */
[data-testid="stMain"] [data-testid="stPageLink-NavLink"] span, [data-testid="stMain"] [data-testid="stPageLink-NavLink"] p
  {{white-space: normal}}
[data-testid="stSidebarNavLink"] span, [data-testid="stSidebarNavLink"] [data-testid="stMarkdownContainer"],
[data-testid="stSidebarNavLink"] p {{white-space: normal; text-overflow: clip; overflow: visible}}
[data-testid="stSidebarNavLink"] {{height: auto}}
@media (max-width: {NARROW_WIDTH_PX}px) {{
  /* plotly's toolbar sits on a figure's top edge, over its panel titles and labels: on a phone, where a tap shows
     it and the figure has no room beside it, it is not shown (the Export menu under each figure downloads it). */
  .modebar-container {{display: none !important}}
  /* Streamlit clips text boxes at their edge: what cannot wrap there (a long inline formula) scrolls instead. */
  [data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"] {{overflow-x: auto; overflow-y: hidden}}
  /* ...which clips what hangs outside its box: a numbered list's "12." gets room for its digits inside it. */
  [data-testid="stMarkdownContainer"] ol {{padding-left: 2.4em}}
}}"""

APP_CSS = "\n".join((
    f'[class*="st-key-{HIDDEN_KEY_PREFIX}"] {{display: none}}',
    # keyboard hints (and the key a button answers to) only where there is a keyboard
    f'@media (hover: none) and (pointer: coarse) {{[class*="st-key-{KEYBOARD_ONLY_PREFIX}"], button kbd[aria-label] '
    '{display: none}}',
    TABLE_CSS,
    PHONE_CSS,
))


def draw_stylesheet() -> None:
    """The stylesheet (call on every run, before the page draws anything). Streamlit puts HTML that is only style
    out of the page's flow, where it takes no room."""
    st.html(f"<style>\n{APP_CSS}\n</style>")
