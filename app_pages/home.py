"""Home: the front door - what the app is, a route for a 50-minute class, and every page with its questions."""

import streamlit as st

from ui.front_door import CLASS_PLAN, QUESTIONS, thumbnail
from ui.navigation import shared_query
from ui.pages import available_pages

from i18n import _
from lessons import training

st.title(_("Positional encodings, explored"))
st.markdown(_(
    "Transformers see a set of tokens; **positional encodings** tell them the order. Move the knobs of RoPE and "
    "its context-extension methods, check the maths with sympy, and train a tiny model to see which encodings "
    "survive sequences longer than they were trained on. Every figure exports for slides, and every view has a "
    "link that restores it."
))

pages = {page.path: page for page in available_pages()}
shared = shared_query()
with st.expander(_("A 50-minute class"), expanded=True, icon=":material/school:"):
    # page links, not markdown ones: they open the page in this tab, in this session, in the reader's language
    minutes = 0
    for stop in CLASS_PLAN:
        if stop.path not in pages:
            continue
        page = pages[stop.path]
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            st.markdown(_("**{start}–{end} min**").format(start=minutes, end=minutes + stop.minutes), width="content")
            st.page_link(page.path, label=_(page.title), icon=page.icon, query_params={**shared, **dict(stop.query)})
        st.caption(_(stop.activity))
        if stop.path == "app_pages/training.py":  # what the store holds and what training more costs, read from it
            st.caption(training.store_text())
        minutes += stop.minutes

st.header(_("Every page"))
cards = [page for page in available_pages() if page.path != "app_pages/home.py"]
for number, page in enumerate(cards):
    if number % 3 == 0:  # a row at a time, so a phone, which stacks columns, keeps the pages in order
        columns = st.columns(3)
    with columns[number % 3].container(border=True):
        image = thumbnail(page.lesson) if page.lesson else None
        if image is not None:
            st.image(str(image), width="stretch")
        st.page_link(page.path, label=_(page.title), icon=page.icon, query_params=shared)
        st.caption(f"{_(page.section)} · {_(page.summary)}")
        questions = QUESTIONS.get(page.path)
        if questions:
            st.markdown("\n".join(f"- {_(question)}" for question in questions))
