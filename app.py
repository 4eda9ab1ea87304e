"""Entry point: `streamlit run app.py`."""

import streamlit as st

from i18n import _
from ui import vote
from ui.language import use_session_language
from ui.layout import finish_page, start_page
from ui.pages import available_pages

st.set_page_config(page_title=_("Positional-encoding explorer"), page_icon=":material/cyclone:", layout="wide")

if vote.ROOM_KEY in st.query_params:  # a student's phone (``/vote?room=CODE``): the vote screen alone, no sidebar
    use_session_language()
    # a default page is served at "/" whatever its url_path: the phone's page needs a default beside it to answer
    # at /vote (and a link without the path still votes)
    st.navigation([st.Page(vote.phone_screen, title=_("Vote"), icon=":material/how_to_vote:", default=True),
                   st.Page("app_pages/vote.py", title=_("Vote"), icon=":material/how_to_vote:", url_path=vote.PHONE_PAGE)],
                  position="hidden").run()
    st.stop()

sections: dict[str, list] = {}
listed = {page.url_path: page for page in available_pages()}
for page in listed.values():
    sections.setdefault(_(page.section), []).append(
        st.Page(page.path, title=_(page.title), icon=page.icon, default=page.path == "app_pages/home.py",
                url_path=page.url_path or None)
    )

# every page listed: a folded list ends in "View N more", a button whose text Streamlit does not let an app translate
navigation = st.navigation(sections, expanded=True)
start_page(charts=listed[navigation.url_path].charts)
try:
    navigation.run()
finally:
    finish_page()
