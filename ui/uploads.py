"""File uploads that become text in a settings widget, so an upload, a paste, a link and the CLI all
reach the lesson as the same text (``pe_core.inputs`` reads every file type)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from i18n import DEFAULT_LANGUAGE, _, current_language

# Streamlit writes an uploader's own words (its button, the size limit) in English and offers no way to change
# them; in another language the app's CSS puts its own words in their place. If a Streamlit release renames these
# parts the rules match nothing and the English words show, nothing worse.
_UPLOADER_WORDS = """.st-key-{key} [data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] p,
.st-key-{key} [data-testid="stFileUploaderDropzoneInstructions"] span {{font-size: 0}}
.st-key-{key} [data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] p::after
  {{content: "{button}"; font-size: 0.875rem}}
.st-key-{key} [data-testid="stFileUploaderDropzoneInstructions"] span::after {{content: "{limit}"; font-size: 0.875rem}}"""


def upload_into(label: str, key: str, types: Sequence[str], target: str, convert: Callable[[bytes, str], str], *,
                also: dict | None = None, help: str | None = None) -> None:
    """A file uploader: its file, turned into text by ``convert(bytes, name)``, replaces widget ``target``'s text
    (and the widgets in ``also`` take the given values). A file that cannot be read leaves the text as it was and
    says why, here."""
    error_key = f"_{key}_error"

    def on_change() -> None:
        uploaded = st.session_state.get(key)
        if uploaded is None:
            st.session_state.pop(error_key, None)
            return
        try:
            text = convert(uploaded.getvalue(), uploaded.name)
        except ValueError as err:
            st.session_state[error_key] = _("{name} could not be used: {message}").format(name=uploaded.name,
                                                                                        message=err)
            return
        st.session_state.pop(error_key, None)
        st.session_state[target] = text
        for name, value in (also or {}).items():
            st.session_state[name] = value

    st.file_uploader(label, type=list(types), key=key, on_change=on_change, help=help)
    if current_language() != DEFAULT_LANGUAGE:
        st.html(f"<style>{uploader_words_css(key, types)}</style>")
    if error_key in st.session_state:
        st.error(st.session_state[error_key], icon=":material/warning:")


def uploader_words_css(key: str, types: Sequence[str]) -> str:
    """The CSS that writes uploader ``key``'s button and size limit in the reader's language (the same text on
    every run, so the browser adds it once)."""
    megabytes = st.get_option("server.maxUploadSize")
    limit = _("at most {size} MB per file").format(size=megabytes)
    if types:
        limit += " · " + ", ".join(t.lstrip(".").upper() for t in types)
    return _UPLOADER_WORDS.format(key=key, button=_css_string(_("Upload")), limit=_css_string(limit))


def _css_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def config_text(data: bytes, name: str) -> str:
    """An uploaded config.json as text (checked to be a JSON object)."""
    import json

    try:
        text = data.decode("utf-8-sig")
        config = json.loads(text)
    except UnicodeDecodeError as err:
        raise ValueError(_("it is not UTF-8 text.")) from err
    except json.JSONDecodeError as err:
        raise ValueError(_("it is not valid JSON: {message} (line {line}, column {column}).").format(
            message=err.msg, line=err.lineno, column=err.colno)) from err
    if not isinstance(config, dict):
        raise ValueError(_("a config.json must be a JSON object ({...})."))
    return json.dumps(config, indent=1)
