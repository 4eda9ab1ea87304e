"""The one translation function every user-visible string goes through.

``_("text")`` translates now, in the language of the current reader; ``N_("text")`` only marks a
string for extraction where it is defined at import time (a setting's label, a figure's title),
and the code that shows it calls ``_()`` on it then. Keep the argument a literal, and put numbers
in with ``.format`` after translating, so the catalog holds one entry per sentence:
``_("{count} pairs").format(count=n)``.

Which language is current is asked of a provider: the CLI and tests set one language for the
process (``use_language``); the Streamlit app registers a provider that reads the session's choice.
No Streamlit here: pe_core and figures import this module too.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

LANGUAGES = {"en": "English", "zh": "中文"}
DEFAULT_LANGUAGE = "en"

_local = threading.local()
_provider: Callable[[], str | None] | None = None


def set_language_provider(provider: Callable[[], str | None] | None) -> None:
    """Ask ``provider()`` for the current language (None or an unknown code means the default)."""
    global _provider
    _provider = provider


def current_language() -> str:
    forced = getattr(_local, "language", None)
    if forced is not None:
        return forced
    if _provider is not None:
        chosen = _provider()
        if chosen in LANGUAGES:
            return chosen
    return DEFAULT_LANGUAGE


def sentences(parts) -> str:
    """Translated sentences as one text: Chinese runs sentences together, English puts a space between them."""
    return ("" if current_language() == "zh" else " ").join(part for part in parts if part)


def full_stop(text: str) -> str:
    """Clauses that each end in a semicolon (a sympy check lists what it checked that way), as one sentence: its
    last semicolon, English or Chinese, becomes a full stop."""
    text = text.rstrip()
    if text.endswith(";"):
        return text[:-1] + "."
    if text.endswith("；"):
        return text[:-1] + "。"
    return text


@contextlib.contextmanager
def use_language(language: str) -> Iterator[None]:
    """Translate into ``language`` inside the block, on this thread (the CLI and tests use it)."""
    if language not in LANGUAGES:
        raise ValueError(f"Unknown language {language!r}; choose one of {', '.join(LANGUAGES)}.")
    previous = getattr(_local, "language", None)
    _local.language = language
    try:
        yield
    finally:
        _local.language = previous


def _translations(language: str):
    """The gettext catalog of ``language``, or None for the source language."""
    if language == DEFAULT_LANGUAGE:
        return None
    from i18n.catalog import translations

    return translations(language)


def _(message: str) -> str:
    """``message`` in the current language (itself where no translation exists)."""
    if not message:
        return message
    if isinstance(message, Deferred):
        return message.translated()
    catalog = _translations(current_language())
    return catalog.gettext(message) if catalog is not None else message


class Deferred(str):
    """A message with its values, translated where it is shown rather than where it is made.

    For text built once and kept (sympy's verdicts are computed once per process, then shown in
    every reader's language): ``Deferred(N_("at {where}: residual ≈ {value}"), where=..., value=...)``.
    As a ``str`` it is the English text, so it compares, searches and prints as before; ``_()`` of it
    translates the message and fills in the values (``Deferred`` values are translated too).
    ``Deferred.join(parts)`` keeps sentences that are translated one by one.
    """

    message: str
    values: dict
    parts: tuple[str, ...]

    def __new__(cls, message: str, /, **values) -> Deferred:
        self = super().__new__(cls, message.format(**values) if values else message)
        self.message, self.values, self.parts = message, values, ()
        return self

    @classmethod
    def join(cls, parts, separator: str = " ") -> Deferred:
        """Sentences shown one after another, each translated on its own."""
        parts = tuple(p for p in parts if p)
        self = super().__new__(cls, separator.join(parts))
        self.message, self.values, self.parts = "", {}, parts
        return self

    def translated(self) -> str:
        if self.parts:
            return sentences(_(part) for part in self.parts)
        values = {name: _(value) if isinstance(value, Deferred) else value for name, value in self.values.items()}
        return _(self.message).format(**values) if values else _(self.message)


class Latex(str):
    r"""A formula made once and typeset in every reader's language: LaTeX whose ``\text{...}`` words translate.

    For formulas built at import time (a derivation's claim and steps):
    ``Latex(r"s_{\text{needed}} = \rho^{(d-2)/(2i_0)}", N_("needed"))`` names each word, which must appear in
    the LaTeX as ``\text{word}``. As a ``str`` it is the English LaTeX; ``translated_latex(formula)`` puts each
    named word in the current language where the formula is shown. The LaTeX itself never enters the catalog.
    """

    words: tuple[str, ...]

    def __new__(cls, source: str, /, *words: str) -> Latex:
        missing = [word for word in words if r"\text{" + word + "}" not in source]
        if missing:
            raise ValueError(f"{', '.join(missing)} must appear as \\text{{...}} in the formula {source!r}.")
        self = super().__new__(cls, source)
        self.words = words
        return self

    def translated(self) -> str:
        text = str(self)
        for word in self.words:
            text = text.replace(r"\text{" + word + "}", r"\text{" + _(word) + "}")
        return text


def translated_latex(formula: str) -> str:
    """LaTeX to typeset now: a ``Latex`` formula with its words in the current language, other LaTeX unchanged."""
    return formula.translated() if isinstance(formula, Latex) else formula


def ngettext(singular: str, plural: str, count: int) -> str:
    catalog = _translations(current_language())
    if catalog is None:
        return singular if count == 1 else plural
    return catalog.ngettext(singular, plural, count)


def N_(message: str) -> str:  # noqa: N802 - the gettext convention extraction tools look for
    """Mark ``message`` for the catalog without translating it (translated where it is shown)."""
    return message
