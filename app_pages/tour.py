"""RoPE and long context in 12 steps: a guided lesson. Each step sets a lesson's view, asks the reader to
predict, then shows the figure that settles it and why."""

import streamlit as st

from ui import tour as guide
from ui import vote

from i18n import _
from lessons import tour

steps = tour.available_steps()
if guide.presenting():  # one screen for the question, the next for the figure that answers it
    head, controls = st.columns([6.7, 3.3], vertical_alignment="center")
    with controls, st.container(key=guide.CONTROLS_BOX, horizontal=True, horizontal_alignment="right",
                                vertical_alignment="center"):
        guide.type_control()
        guide.presenter_switch()
    index = guide.step_picker(len(steps))  # hidden: the header counts the steps
    step, text = steps[index], tour.step_text(steps[index])
    if guide.in_summary(index, len(steps)):
        head.header(_("Summary · {title}").format(title=_(tour.TITLE)))
        guide.summary(steps, presenting=True)
        st.stop()
    head.header(_("{number} / {count} · {title}").format(number=index + 1, count=len(steps), title=text.title))
    # the arrows' buttons stay in one place, right under the header, whether the answer shows or not: a key pressed
    # while the next step is being drawn finds them there
    status, keys = st.columns([6, 4], vertical_alignment="center")
    guide.navigation(step, index, len(steps), presenting=True, where=keys)
    shown = guide.revealed(step)  # the buttons' callbacks ran before this run: it holds for the whole screen
    with status:
        guide.keyboard_note(step, presenting=True)
    if shown:  # the slide, and beside it the answer and why it settles the question: one screen, nothing below
        with st.container(key=guide.ANSWER_BOX, horizontal=True):
            guide.figure(step, presenting=True)
            with st.container(key=guide.WHY_BOX):
                guide.verdict(step, text)
                st.markdown(guide.unbroken(text.why))
                vote.room_tally(step, index, text.choices)  # how the class voted, where a room is open
    else:
        st.markdown(guide.unbroken(text.text))
        guide.ask(step, text)
        vote.room_panel(step, index, shown=False)  # the class votes from phones
else:
    st.title(_(tour.TITLE))
    st.markdown(_(
        "A short path through the app. Each step sets up one figure from a lesson, tells you what you are looking at, "
        "and asks a question: **answer first**, then reveal the figure that settles it and why. Every number in the "
        "text is computed, and every figure opens in its full page with the same settings."
    ))
    guide.deck_download()
    for missing in tour.missing_steps():
        st.info(_("Step “{title}” appears when the {lesson} lesson is installed.").format(
            title=_(missing.title), lesson=missing.lesson), icon=":material/extension:")
    picker, switch = st.columns([5, 1.6], vertical_alignment="bottom")
    with picker:
        index = guide.step_picker(len(steps))
    with switch:
        guide.presenter_switch()
    step, text = steps[index], tour.step_text(steps[index])
    if guide.in_summary(index, len(steps)):
        st.header(_("Summary"))
        guide.summary(steps, presenting=False)
        st.stop()

    st.header(_("{number} / {count} · {title}").format(number=index + 1, count=len(steps), title=text.title))
    st.markdown(text.text)
    guide.ask(step, text)
    guide.navigation(step, index, len(steps), presenting=False)
    if guide.revealed(step):
        guide.verdict(step, text)
        st.markdown(text.why)
        guide.figure(step, presenting=False)
        guide.sources(step)
        guide.full_page_link(step)
    else:
        guide.placeholder(step)
    guide.keyboard_note(step)
