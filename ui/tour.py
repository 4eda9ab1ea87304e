"""The guided lesson on a page: a step picker bound to ``?step``, predict-then-reveal, presenter mode.

Keyboard: the choices answer to 1–4, "Reveal" and "Next" to → and "Previous" to ← (Streamlit's button
shortcuts; a presenter's clicker sends the same arrows). A click reveals the answer first, then moves on,
so in presenter mode the class sees the question, then the figure that settles it.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.scriptrunner import get_script_run_ctx

from figures.export import INSTALL_HINT, browser_available, render
from i18n import LANGUAGES, _, current_language, ngettext
from lessons import all_lessons, deck, tour
from lessons.base import SLIDE, BoundedCache
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
SLIDE_BOX = "tour_slide"  # the container the presenter's figure fills at 16:9
WHY_BOX = "tour_why"  # the presenter's "why", beside the slide
# The presenter's answer screen: the slide and the "why" beside it, as shares of the width. At 1280 × 720 the slide is
# 805 × 453 px under the header and the answer, and the longest "why" (330 characters) takes twelve lines beside it.
SLIDE_AND_WHY = (0.68, 0.32)
KEYS_BOX = f"{KEYBOARD_ONLY_PREFIX}tour"  # the keyboard hints: shown where there is a keyboard
_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")

# Presenter mode: no sidebar or top bar, large type, and the figure as the slide itself: the export's 16:9
# SVG, scaled to the largest size that fits under the step's header (a live chart would be laid out again at
# that size, and a slide's type and margins are made for 1280 × 720).
PRESENTER_CSS = f"""<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
[data-testid="stHeader"], .st-key-{STEP_KEY} {{ display: none !important; }}
[data-testid="stMainBlockContainer"] {{ max-width: 100%; padding: 1.2rem 2.5rem 2rem 2.5rem; }}
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] li {{ font-size: 1.55rem; line-height: 1.4; }}
[data-testid="stMain"] h2 {{ font-size: 2.1rem; padding-top: 0.2rem; }}
[data-testid="stMain"] [data-testid="stCaptionContainer"] p {{ font-size: 1.05rem; }}
[data-testid="stMain"] button p {{ font-size: 1.3rem; }}
.st-key-{SLIDE_BOX} {{ width: min(calc((100vh - 10.75rem) * 16 / 9), 100%) !important; margin: 0 auto; }}
.st-key-{SLIDE_BOX} img {{ width: 100%; height: auto; }}
.st-key-{WHY_BOX} [data-testid="stMarkdownContainer"] p {{ font-size: 1.3rem !important; line-height: 1.4; }}
</style>"""
_SLIDES = BoundedCache(48)  # (step, language) -> the slide as SVG


def slide_svg(step: tour.Step) -> str | None:
    """The step's figure as the slide export draws it (SVG), or None where no browser can draw it."""
    if not browser_available():
        return None
    figure = tour.step_figure(step, SLIDE)
    try:
        return _SLIDES.get_or_make((step.slug, current_language()), lambda: render(figure, "svg").decode("utf-8"))
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
        st.html(PRESENTER_CSS)
    return on


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
    """The step's figure from its lesson; when presenting, the 16:9 slide fitted to the screen (the live
    screen figure where the server has no browser to draw slides)."""
    key = f"tour_{step.slug}"
    if presenting:
        with st.container(key=SLIDE_BOX):
            svg = slide_svg(step)
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


def keyboard_note(step: tour.Step) -> None:
    """The keys the lesson answers to, where the reader has a keyboard (the stylesheet hides it on a touch screen)."""
    with st.container(key=KEYS_BOX):
        st.caption(_("Keys: 1–{count} answer · → reveal the answer, then the next step · ← previous step.").format(
            count=len(step.choices)))


_DECKS = BoundedCache(6)  # (format, answers, language) -> (file name, bytes): built once, shared by every session
DECK_BUILT_KEY = "tour_deck_built"  # the deck this session asked for: (format, answers, language)


def _want_deck(key: tuple) -> None:
    st.session_state[DECK_BUILT_KEY] = key


def deck_download() -> None:
    """"Download the lesson as a deck": a format, with or without the answers, in the reader's language; built on
    demand (``lessons.deck``), then offered for download."""
    with st.expander(_("Download the lesson as a deck"), icon=":material/slideshow:"):
        fmt = st.radio(_("Format"), tuple(deck.DOWNLOAD_FORMATS), key="tour_deck_format", horizontal=True,
                       format_func=lambda name: _(deck.DOWNLOAD_FORMATS[name]))
        handout = fmt == "handout"
        answers = st.checkbox(_("With the answer slides"), value=True, key="tour_deck_answers", disabled=handout,
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
