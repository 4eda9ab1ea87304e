"""Entry point: `streamlit run app.py`."""

import streamlit as st

from ui.layout import finish_page, start_page
from ui.pages import available_pages

st.set_page_config(page_title="Positional-encoding explorer", page_icon="🌀", layout="wide")

sections: dict[str, list] = {}
for page in available_pages():
    sections.setdefault(page.section, []).append(
        st.Page(page.path, title=page.title, icon=page.icon, default=page.path == "pages/home.py",
                url_path=page.url_path or None)
    )

navigation = st.navigation(sections)
start_page()
try:
    navigation.run()
finally:
    finish_page()
