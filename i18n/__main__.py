"""Catalog maintenance: ``python -m i18n extract|update|compile|check|missing``.

- extract: collect every ``_()``, ``N_()`` and ``ngettext()`` string into ``locales/messages.pot``;
- update: merge the template into each language's ``messages.po`` (new strings arrive untranslated);
- compile: build the ``.mo`` files (the app also does this itself when a catalog is newer);
- check: list strings that have no translation, are fuzzy, whose placeholders differ, or that do not
  use the term list's word for a term (``locales/<lang>/terms.tsv``); exit status 1 if any;
- missing: list the strings the code marks that the catalog does not hold yet (extracts to a
  temporary template; changes no file).

Adding or changing user-visible strings (a new page, a new figure):

  1. wrap each string in ``_()`` where it is shown, or ``N_()`` where it is defined at import time
     (a setting's label, a figure's title); keep the argument a literal and put values in with
     named placeholders: ``_("{count} pairs").format(count=n)``, never ``_(f"...")``;
  2. ``python -m i18n extract && python -m i18n update``;
  3. translate the new entries of ``locales/zh/LC_MESSAGES/messages.po`` (``python -m i18n check``
     lists them with their source lines): keep ``{placeholders}``, plotly's ``%{x}`` fields, markdown
     and LaTeX as they are, and use the Chinese terms of ``locales/zh/terms.tsv`` (method names such
     as RoPE, YaRN, NTK-aware, ALiBi stay in Latin script);
  4. ``python -m i18n check`` and ``pytest tests/test_i18n.py`` (which also runs every page in Chinese
     and reports text that bypasses the translation function).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from i18n import LANGUAGES
from i18n.catalog import LOCALES, ROOT, compile_catalog
from i18n.check import catalog_problems

TEMPLATE = LOCALES / "messages.pot"
SOURCES = ["app.py", "app_pages", "ui", "lessons", "figures", "derivations", "pe_core", "references", "i18n", "benchmarks"]
KEYWORDS = ["-k", "_", "-k", "N_", "-k", "ngettext:1,2"]


def extract(target: Path = TEMPLATE) -> None:
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", "extract", "-F", "babel.cfg", *KEYWORDS,
                    "--no-default-keywords", "--sort-by-file", "--no-wrap", "--project", "pe-explorer",
                    "-o", str(target), *SOURCES], cwd=ROOT, check=True, capture_output=True)


def update() -> None:
    for language in LANGUAGES:
        if language == "en":
            continue
        target = LOCALES / language / "LC_MESSAGES" / "messages.po"
        command = "update" if target.exists() else "init"
        subprocess.run([sys.executable, "-m", "babel.messages.frontend", command, "-i", str(TEMPLATE),
                        "-d", str(LOCALES), "-l", language, "--no-wrap"]
                       + (["--ignore-obsolete"] if command == "update" else []), cwd=ROOT, check=True)


def marked_messages() -> dict[str, list[tuple[str, int]]]:
    """Every string the code marks for translation now, with where it is (extracted afresh)."""
    from babel.messages.pofile import read_po

    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "messages.pot"
        extract(target)
        with target.open("rb") as handle:
            template = read_po(handle)
    return {(m.id[0] if isinstance(m.id, tuple) else m.id): list(m.locations) for m in template if m.id}


def missing_messages(language: str) -> dict[str, list[tuple[str, int]]]:
    """Strings the code marks that ``language``'s catalog does not hold (run extract + update, then translate)."""
    from i18n.check import read_catalog

    held = {m.id[0] if isinstance(m.id, tuple) else m.id for m in read_catalog(language) if m.id}
    return {text: where for text, where in marked_messages().items() if text not in held}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m i18n", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("action", choices=("extract", "update", "compile", "check", "missing"))
    args = parser.parse_args(argv)
    if args.action == "extract":
        extract()
        print(f"wrote {TEMPLATE.relative_to(ROOT)}")
    elif args.action == "update":
        update()
    elif args.action == "compile":
        for language in LANGUAGES:
            if language != "en":
                print(compile_catalog(language))
    elif args.action == "missing":
        found = 0
        for language in LANGUAGES:
            if language == "en":
                continue
            for text, where in missing_messages(language).items():
                found += 1
                places = ", ".join(f"{file}:{line}" for file, line in where[:2])
                print(f"{language}: not in the catalog: {text[:70]!r} ({places})")
        return 1 if found else 0
    else:
        problems = {language: catalog_problems(language) for language in LANGUAGES if language != "en"}
        for language, found in problems.items():
            for problem in found:
                print(f"{language}: {problem}")
        return 1 if any(problems.values()) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
