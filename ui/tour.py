"""The guided lesson on a page: a step picker bound to ``?step``, predict-then-reveal, presenter mode.

Keyboard: the choices answer to 1–4, "Reveal" and "Next" to → and "Previous" to ← (Streamlit's button
shortcuts; a presenter's clicker sends the same arrows). A click reveals the answer first, then moves on,
so in presenter mode the class sees the question, then the figure that settles it.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from urllib.parse import urlencode

import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.scriptrunner import get_script_run_ctx

from figures.export import INSTALL_HINT, browser_available, render
from i18n import LANGUAGES, _, current_language, ngettext
from lessons import all_lessons, deck, tour
from lessons.base import SLIDE, BoundedCache, FigureStyle
from references import cite
from ui import export, params
from ui.figure import show_figure
from ui.lesson import PART_KEY
from ui.pages import PageInfo, available_pages
from ui.stylesheet import KEYBOARD_ONLY_PREFIX

log = logging.getLogger(__name__)

STEP_KEY, PRESENT_KEY = "step", "present"
SUMMARY_KEY = "tour_summary"  # set once the reader moves on from the last step: the summary screen shows
FIRST_STEP = 1  # steps are numbered from 1 in the URL (``?step=N``)
SLIDE_BOX = "tour_slide"  # the container the presenter's figure fills
WHY_BOX = "tour_why"  # the presenter's "why", beside the slide
ANSWER_BOX = "tour_answer"  # the presenter's answer screen: the slide and the "why" side by side
SUMMARY_BOX = "tour_summary_list"  # the presenter's summary: two columns
CONTROLS_BOX = "tour_controls"  # the presenter's type scale and switch, top right
KEYS_BOX = f"{KEYBOARD_ONLY_PREFIX}tour"  # the keyboard hints: shown where there is a keyboard
_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")

# Presenter mode is laid out on a 1280 × 720 screen in "design pixels" and scaled as a whole with the screen
# (``--u``: one design pixel, the smaller of the width's and the height's share), so a 1920 × 1080 projector shows
# the same screen 1.5 times larger. At the default type scale the chart's text is at least CHART_TYPE and the
# prose (question, choices, answer, why) PROSE_TYPE design pixels; a type scale multiplies both for large halls.
DESIGN_WIDTH, DESIGN_HEIGHT = 1280, 720
CHART_TYPE, PROSE_TYPE = 24, 28
TYPE_KEY = "type"  # ?type=S|M|L|XL
TYPE_SCALES = {"S": 0.85, "M": 1.0, "L": 1.1, "XL": 1.2}
DEFAULT_TYPE = "M"
# The share of the width the "why" takes beside the slide at each scale: larger type needs a wider column (the
# longest "why", 377 characters in English and 195 in Chinese, must fit beside the slide at every scale).
WHY_SHARES = {"S": 0.36, "M": 0.42, "L": 0.48, "XL": 0.54}
_PAD_X, _PAD_TOP, _PAD_BOTTOM, _GAP = 32, 12, 12, 16  # design pixels
# Height the header and the buttons' line take above the slide: a fixed part and a part that grows with the type
_ABOVE_FIXED, _ABOVE_PER_SCALE = 40, 104


def type_scale() -> str:
    """The presenter's type scale (S, M, L or XL): the control's state, else the link's ``?type=``."""
    chosen = st.session_state.get(TYPE_KEY)
    if chosen in TYPE_SCALES:
        return chosen
    linked = st.query_params.get(TYPE_KEY)
    return linked if linked in TYPE_SCALES else DEFAULT_TYPE


def slide_canvas(scale: str) -> tuple[int, int]:
    """The slide's size in design pixels at a type scale: the width beside the "why", the height under the header."""
    content = DESIGN_WIDTH - 2 * _PAD_X - _GAP
    width = round(content * (1 - WHY_SHARES[scale]))
    height = DESIGN_HEIGHT - _PAD_TOP - _PAD_BOTTOM - _ABOVE_FIXED - round(_ABOVE_PER_SCALE * TYPE_SCALES[scale])
    return width, height


def presenter_style(scale: str) -> FigureStyle:
    """The slide style the presenter's screen draws a step's figure in: its canvas is the size it is shown at on a
    1280 × 720 screen, so its type (CHART_TYPE at the least, times the scale) is shown at that size there."""
    factor = TYPE_SCALES[scale]  # no title: the step's header says what the figure shows
    return dataclasses.replace(SLIDE, titles=False, canvas=slide_canvas(scale), font_size=CHART_TYPE * factor,
                               least=CHART_TYPE * factor)


def presenter_css(scale: str) -> str:
    """Presenter mode's stylesheet: no sidebar or top bar; the whole screen in design pixels (Streamlit's rem too,
    so its spacing scales with the screen); prose at PROSE_TYPE times the scale; the slide and why side by side."""
    factor = TYPE_SCALES[scale]
    why = WHY_SHARES[scale]
    _width, height = slide_canvas(scale)
    prose = f"calc({PROSE_TYPE * factor:g} * var(--u))"
    small = "calc(17 * var(--u))"
    return f"""<style>
:root {{ --u: min({100 / DESIGN_WIDTH:.6f}vw, {100 / DESIGN_HEIGHT:.6f}vh); }}
html {{ font-size: calc(16 * var(--u)); }}
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
[data-testid="stHeader"], .st-key-{STEP_KEY} {{ display: none !important; }}
[data-testid="stMainBlockContainer"] {{ max-width: 100%;
  padding: calc({_PAD_TOP} * var(--u)) calc({_PAD_X} * var(--u)) calc({_PAD_BOTTOM} * var(--u)); }}
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] li {{ font-size: {prose}; line-height: 1.35; }}
[data-testid="stMain"] h2 {{ font-size: calc(32 * var(--u)); padding: 0; line-height: 1.25;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }}
[data-testid="stMain"] [data-testid="stCaptionContainer"] p {{ font-size: {small}; }}
[data-testid="stMain"] button p {{ font-size: {prose}; }}
[class*="st-key-tour_previous"] button p, [class*="st-key-tour_next"] button p, .st-key-tour_reveal button p,
[class*="st-key-tour_summary"] button p {{ font-size: calc({24 * factor:g} * var(--u)); }}
.st-key-{WHY_BOX} [data-testid="stAlert"] > div {{ padding: calc(8 * var(--u)) calc(12 * var(--u)); }}
[data-testid="stMain"] .katex, [data-testid="stMain"] .katex-html {{ white-space: nowrap; }}
.st-key-{CONTROLS_BOX} p {{ font-size: {small} !important; line-height: 1.2; }}
.st-key-{CONTROLS_BOX} button {{ min-height: 0; padding: calc(4 * var(--u)) calc(10 * var(--u)); }}
.st-key-tour_type_down, .st-key-tour_type_up {{ position: absolute !important; width: 1px !important; height: 1px;
  overflow: hidden; opacity: 0; pointer-events: none; }}
.st-key-{SLIDE_BOX} {{ width: 100%; }}
.st-key-{SLIDE_BOX} img {{ width: 100%; height: auto; max-height: calc({height} * var(--u)); object-fit: contain; }}
.st-key-{ANSWER_BOX} {{ display: grid !important; grid-template-columns: {1 - why:.3f}fr {why:.3f}fr;
  gap: calc({_GAP} * var(--u)); align-items: start; }}
.st-key-{ANSWER_BOX} > div {{ width: auto !important; min-width: 0; }}
.st-key-{SUMMARY_BOX} > div {{ flex: 1 1 0 !important; min-width: 0; }}
.st-key-{SUMMARY_BOX} [data-testid="stMarkdownContainer"] li {{ font-size: calc({22 * factor:g} * var(--u)); }}
</style>"""


_SLIDES = BoundedCache(96)  # (step, language, type scale) -> the slide as SVG


def slide_svg(step: tour.Step, scale: str = DEFAULT_TYPE) -> str | None:
    """The step's figure drawn for the presenter's screen at a type scale (SVG), or None where no browser can
    draw it."""
    if not browser_available():
        return None
    figure = tour.step_figure(step, presenter_style(scale))
    try:
        return _SLIDES.get_or_make((step.slug, current_language(), scale),
                                   lambda: render(figure, "svg").decode("utf-8"))
    except Exception:  # noqa: BLE001 - a browser that fails to draw: the live chart instead
        log.exception("drawing the slide of %s failed", step.slug)
        return None


def presenting() -> bool:
    """Whether this run presents: the toggle's state, else the link's ``?present=1``. Known before the toggle is
    drawn, so the page can lay itself out for it."""
    if PRESENT_KEY not in st.session_state:
        linked = st.query_params.get(PRESENT_KEY)
        st.session_state[PRESENT_KEY] = linked is not None and linked.lower() in _YES
        if linked is not None and linked.lower() not in (*_YES, *_NO):
            st.warning(_("The link set presenter mode to `{value}`; use present=1 to present.").format(
                value=linked), icon=":material/link:")
    return bool(st.session_state[PRESENT_KEY])


def _keep_in_link() -> None:
    if st.session_state.get(PRESENT_KEY):
        if st.query_params.get(PRESENT_KEY) != "1":
            st.query_params[PRESENT_KEY] = "1"
    elif PRESENT_KEY in st.query_params:
        del st.query_params[PRESENT_KEY]


def presenter_switch() -> bool:
    """The presenter-mode toggle, kept in the link as ``?present=1``; when on it also hides the sidebar. Its label
    stays visible in presenter mode too: a switch with no words says nothing to the one who must turn it off."""
    on = st.toggle(_("Presenter mode"), key=PRESENT_KEY, on_change=_keep_in_link,
                   help=_("No sidebar, large type, one figure per screen at 16:9; → reveals, then moves on."))
    _keep_in_link()
    if on:
        st.html(presenter_css(type_scale()))
    return on


def _bigger(step: int) -> None:
    names = list(TYPE_SCALES)
    now = names.index(type_scale())
    st.session_state[TYPE_KEY] = names[min(len(names) - 1, max(0, now + step))]


def type_control() -> str:
    """The type scale, S to XL, bound to the link as ``?type=``, with ↑ and ↓ (and A+, A−) for larger and smaller
    type: a large hall reads the same screen at a larger scale. Returns the scale shown. (The buttons carry the keys
    and are hidden: the S–XL control says the same in less room.)"""
    linked = st.query_params.get(TYPE_KEY)
    if linked is not None and linked not in TYPE_SCALES and TYPE_KEY not in st.session_state:
        st.warning(_("The link set the type size to `{value}`; use one of {choices}.").format(
            value=linked, choices=", ".join(TYPE_SCALES)), icon=":material/link:")
    if st.session_state.get(TYPE_KEY) not in TYPE_SCALES:
        st.session_state[TYPE_KEY] = type_scale()
    help_text = _("Type size on the presenter's screen: larger for a large hall (keys ↑ and ↓).")
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        st.button("A−", key="tour_type_down", shortcut="Down", on_click=_bigger, args=(-1,), help=help_text)
        st.segmented_control(_("Type size"), list(TYPE_SCALES), key=TYPE_KEY, required=True, bind="query-params",
                             help=help_text, label_visibility="collapsed")
        st.button("A+", key="tour_type_up", shortcut="Up", on_click=_bigger, args=(1,), help=help_text)
    return type_scale()


def step_picker(count: int) -> int:
    """The step slider, bound to ``?step=N`` (1-based); returns the step's index."""
    number = params.select_slider(_("Step"), STEP_KEY, tuple(range(FIRST_STEP, count + 1)), FIRST_STEP,
                                  on_change=_leave_summary)
    return number - FIRST_STEP


def _leave_summary() -> None:
    st.session_state[SUMMARY_KEY] = False


def in_summary(index: int, count: int) -> bool:
    """Whether the summary screen shows: the reader moved on from the last step (and has not gone back)."""
    return index == count - 1 and bool(st.session_state.get(SUMMARY_KEY))


def _choice_key(step: tour.Step) -> str:
    return f"tour_choice_{step.slug}"


def _shown_key(step: tour.Step) -> str:
    return f"tour_shown_{step.slug}"


def chosen(step: tour.Step) -> int | None:
    return st.session_state.get(_choice_key(step))


def revealed(step: tour.Step) -> bool:
    return bool(st.session_state.get(_shown_key(step)))


def _shown_number() -> int:
    """The number of the step on screen at the moment of a press (``step_picker``'s value)."""
    return st.session_state.get(STEP_KEY, FIRST_STEP)


def _back() -> None:
    """← from the step shown now. The button's own step could be stale: a presenter who presses → then ← quickly
    presses ← on the buttons drawn for the step before, while the run that draws the new step's is still going."""
    if st.session_state.get(SUMMARY_KEY):  # from the summary back to the last step
        _leave_summary()
        return
    number = _shown_number()
    if number > FIRST_STEP:
        st.session_state[STEP_KEY] = number - 1


def _forward() -> None:
    """→ from the step shown now (see ``_back``): reveal its answer (which needs a choice unless presenting),
    then move on; never past a step whose answer the class has not seen."""
    steps = tour.available_steps()
    number = _shown_number()
    step = steps[number - FIRST_STEP]
    if not revealed(step):
        if _may_reveal(step, presenting=bool(st.session_state.get(PRESENT_KEY))):
            _reveal(step)
    elif number < len(steps):
        st.session_state[STEP_KEY] = number + 1
    else:  # past the last step: the summary
        st.session_state[SUMMARY_KEY] = True


def _may_reveal(step: tour.Step, *, presenting: bool) -> bool:
    """The class sees the answer once the reader has picked one; a presenter reveals it without."""
    return presenting or chosen(step) is not None


def _choose(step: tour.Step, index: int) -> None:
    st.session_state[_choice_key(step)] = index


def _reveal(step: tour.Step) -> None:
    st.session_state[_shown_key(step)] = True


def ask(step: tour.Step, text: tour.StepText) -> None:
    """The question and one button per choice, side by side (keys 1–4); after the reveal, the answer ticked."""
    st.markdown(f"**{text.question}**")
    picked, shown = chosen(step), revealed(step)
    for index, (choice, place) in enumerate(zip(text.choices, st.columns(len(text.choices)), strict=True)):
        icon = None
        if shown and index == step.answer:
            icon = ":material/check_circle:"
        elif shown and index == picked:
            icon = ":material/cancel:"
        place.button(choice, key=f"tour_{step.slug}_{index}", on_click=_choose, args=(step, index), icon=icon,
                     type="primary" if index == picked else "secondary", disabled=shown, shortcut=str(index + 1),
                     width="stretch", wrap=True)


def navigation(step: tour.Step, index: int, count: int, presenting: bool, where: DeltaGenerator | None = None) -> None:
    """← Previous, and → Reveal (needs an answer, except when presenting) or → Next; in ``where`` if given."""
    with (where or st.container()), st.container(horizontal=True, horizontal_alignment="right" if where else "left"):
        st.button(_("Previous"), key="tour_previous", shortcut="Left", disabled=index == 0, on_click=_back)
        if not revealed(step):
            waiting = not _may_reveal(step, presenting=presenting)
            st.button(_("Reveal the answer"), key="tour_reveal", type="primary", shortcut="Right", disabled=waiting,
                      on_click=_forward, help=_("Pick an answer first.") if waiting else None)
        elif index < count - 1:
            st.button(_("Next step"), key="tour_next", type="primary", shortcut="Right", on_click=_forward)
        else:
            st.button(_("Summary"), key="tour_summary_button", type="primary", shortcut="Right", on_click=_forward,
                      help=_("What each step showed, one line each."))


def summary(steps: tuple[tour.Step, ...], presenting: bool) -> None:
    """The end of the lesson: each step's title, question and answer, one line each (and the reader's score,
    where they answered)."""
    with st.container(horizontal=True, horizontal_alignment="right" if presenting else "left"):
        st.button(_("Previous"), key="tour_previous", shortcut="Left", on_click=_back)
    st.markdown(_("What each step showed:"))
    texts = [tour.step_text(step) for step in steps]
    if presenting:  # one screen: each step's title and answer, in two columns
        half = (len(texts) + 1) // 2
        with st.container(key=SUMMARY_BOX, horizontal=True, gap="medium"):
            for start in (0, half):
                st.markdown("\n".join(_("{number}. **{title}**: {answer}").format(
                    number=number, title=text.title, answer=text.answer)
                    for number, text in enumerate(texts[start:start + half], start=start + FIRST_STEP)))
    else:
        st.markdown("\n".join(_("{number}. **{title}**: {question} **{answer}**").format(
            number=number, title=text.title, question=text.question, answer=text.answer)
            for number, text in enumerate(texts, start=FIRST_STEP)))
    answered = [step for step in steps if chosen(step) is not None]
    if answered:
        right = sum(chosen(step) == step.answer for step in answered)
        st.caption(ngettext("You answered {right} of {count} question right.",
                            "You answered {right} of {count} questions right.", len(answered)).format(
            right=right, count=len(answered)))


def verdict(step: tour.Step, text: tour.StepText) -> None:
    picked = chosen(step)
    if picked is None:
        st.info(_("The answer: **{answer}**").format(answer=text.answer), icon=":material/lightbulb:")
    elif picked == step.answer:
        st.success(_("Right: **{answer}**").format(answer=text.answer), icon=":material/check_circle:")
    else:
        st.error(_("Not quite: the answer is **{answer}**").format(answer=text.answer), icon=":material/cancel:")


def figure(step: tour.Step, presenting: bool) -> None:
    """The step's figure from its lesson; when presenting, the slide drawn for the screen at its type scale (the
    live screen figure where the server has no browser to draw slides)."""
    key = f"tour_{step.slug}"
    if presenting:
        with st.container(key=SLIDE_BOX):
            svg = slide_svg(step, type_scale())
            if svg is not None:
                st.image(svg, width="stretch")
            else:
                show_figure(tour.step_figure(step), key, styled=True, buttons=False,
                            page=lambda narrow: tour.step_page_figure(step, narrow=narrow))
    else:
        show_figure(tour.step_figure(step, export.current_style()), key, caption=tour.step_caption(step), styled=True,
                    page=lambda narrow: tour.step_page_figure(step, narrow=narrow))


def placeholder(step: tour.Step) -> None:
    """Where the figure will be: its title, so the reader knows what will settle the question."""
    title = _(tour.lesson_of(step).figure_spec(step.figure).title)
    with st.container(border=True):
        st.caption(_("Answer first: then the figure “{title}” shows who was right.").format(title=title))


def sources(step: tour.Step) -> None:
    if step.sources:
        st.caption(_("Sources: {links}").format(links="; ".join(cite(key, where) for key, where in step.sources)))


def _page_of(step: tour.Step) -> PageInfo | None:
    return next((page for page in available_pages() if page.lesson == step.lesson), None)


def full_page_link(step: tour.Step) -> None:
    """A link to the lesson's own page at the step's settings (the page's controls take them from the URL)."""
    page = _page_of(step)
    if page is None:
        return
    query = tour.step_settings(step).query_params()
    part = all_lessons()[step.lesson].part_of(step.figure)
    if part is not None:
        query[PART_KEY] = part.slug  # the tab that shows the step's figure
    label = _("Open this in the full page: {title}").format(title=_(page.title))
    if _in_navigation(page):
        st.page_link(page.path, label=label, icon=":material/open_in_new:", query_params=query)
    else:  # the page run on its own (tests, benchmarks): a plain link
        address = f"/{page.url_path}" + (f"?{urlencode(query, doseq=True)}" if query else "")
        st.markdown(f"[{label}]({address})")


def _in_navigation(page: PageInfo) -> bool:
    ctx = get_script_run_ctx()
    if ctx is None:
        return False
    return any(info.get("url_pathname") == page.url_path for info in ctx.pages_manager.get_pages().values())


def keyboard_note(step: tour.Step, presenting: bool = False) -> None:
    """The keys the lesson answers to, where the reader has a keyboard (the stylesheet hides it on a touch screen)."""
    with st.container(key=KEYS_BOX):
        if presenting:
            st.caption(_("Keys: 1–{count} answer · → reveal the answer, then the next step · ← previous step · "
                         "↑ ↓ type size.").format(count=len(step.choices)))
        else:
            st.caption(_("Keys: 1–{count} answer · → reveal the answer, then the next step · ← previous step.").format(
                count=len(step.choices)))


_MATH = re.compile(r"(\$[^$]+\$)")
_FORMULA_SPACE = re.compile(r" ([=≈<>≤≥×+−·→]) (?=\S)")


def unbroken(text: str) -> str:
    """Prose whose formulas written in plain characters (``λᵢ = 2π/θᵢ``) do not break at their operators: the
    spaces around one are non-breaking (KaTeX's formulas are kept on one line by the presenter's stylesheet)."""
    pieces = _MATH.split(text)  # KaTeX's own formulas (odd pieces) are left as they are
    return "".join(piece if index % 2 else _FORMULA_SPACE.sub("\u00a0\\1\u00a0", piece)
                   for index, piece in enumerate(pieces))


_DECKS = BoundedCache(6)  # (format, answers, language) -> (file name, bytes): built once, shared by every session
DECK_BUILT_KEY = "tour_deck_built"  # the deck this session asked for: (format, answers, language)


def _want_deck(key: tuple) -> None:
    st.session_state[DECK_BUILT_KEY] = key


def deck_download() -> None:
    """"Download the lesson as a deck": a format, with or without the answers, in the reader's language; built on
    demand (``lessons.deck``), then offered for download."""
    with st.expander(_("Download the lesson as a deck"), icon=":material/slideshow:"):
        fmt = params.radio(_("Format"), "deck", tuple(deck.DOWNLOAD_FORMATS), horizontal=True,
                           format_func=lambda name: _(deck.DOWNLOAD_FORMATS[name]))
        handout = fmt == "handout"
        answers = params.checkbox(_("With the answer slides"), "answers", True, disabled=handout,
                              help=_("Without them the deck shows each question and its figure; the answers are "
                                     "left out of the speaker notes and the summary too."))
        st.caption(_("In {language}, the language of this page; speaker notes carry each step's text, answer and "
                     "why.").format(language=LANGUAGES[current_language()]))
        if fmt != "html" and not browser_available():
            st.info(_(INSTALL_HINT), icon=":material/image_not_supported:")
            return
        key = (fmt, answers or handout, current_language())
        if st.session_state.get(DECK_BUILT_KEY) != key:  # asked for: the next run builds it, with no button
            st.button(_("Build"), key="tour_deck_build", icon=":material/build:", on_click=_want_deck, args=(key,))
            return
        try:
            with st.spinner(_("Drawing {count} figures and writing the file…").format(
                    count=len(tour.available_steps()))):
                name, data = _DECKS.get_or_make(key, lambda: deck.download(fmt, answers=answers or handout))
        except Exception:  # noqa: BLE001 - a failed build is reported, never a traceback
            log.exception("building the deck %s failed", key)
            st.session_state.pop(DECK_BUILT_KEY, None)
            st.error(_("The deck could not be built on this server; the command line writes it: "
                       "`python -m figures.export --deck tour --out DIR`."), icon=":material/error:")
            return
        st.download_button(_("Download {name}").format(name=name), data, file_name=name, mime=deck.MIME[fmt],
                           key="tour_deck_download", icon=":material/download:", type="primary")
