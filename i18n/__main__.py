"""Catalog maintenance: ``python -m i18n extract|update|compile|check``.

- extract: collect every ``_()``, ``N_()`` and ``ngettext()`` string into ``locales/messages.pot``;
- update: merge the template into each language's ``messages.po`` (new strings arrive untranslated);
- compile: build the ``.mo`` files (the app also does this itself when a catalog is newer);
- check: list strings that have no translation, are fuzzy, or whose placeholders differ.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from i18n import LANGUAGES
from i18n.catalog import LOCALES, ROOT, compile_catalog
from i18n.check import catalog_problems

TEMPLATE = LOCALES / "messages.pot"
SOURCES = ["app.py", "pages", "ui", "lessons", "figures", "derivations", "pe_core", "references", "i18n", "benchmarks"]


def extract() -> None:
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", "extract", "-F", "babel.cfg",
                    "-k", "_", "-k", "N_", "-k", "ngettext:1,2", "--no-default-keywords", "--sort-by-file",
                    "--no-wrap", "--project", "pe-explorer", "-o", str(TEMPLATE), *SOURCES], cwd=ROOT, check=True)


def update() -> None:
    for language in LANGUAGES:
        if language == "en":
            continue
        target = LOCALES / language / "LC_MESSAGES" / "messages.po"
        command = "update" if target.exists() else "init"
        subprocess.run([sys.executable, "-m", "babel.messages.frontend", command, "-i", str(TEMPLATE),
                        "-d", str(LOCALES), "-l", language, "--no-wrap"]
                       + (["--ignore-obsolete"] if command == "update" else []), cwd=ROOT, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m i18n", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("extract", "update", "compile", "check"))
    args = parser.parse_args(argv)
    if args.action == "extract":
        extract()
    elif args.action == "update":
        update()
    elif args.action == "compile":
        for language in LANGUAGES:
            if language != "en":
                print(compile_catalog(language))
    else:
        problems = {language: catalog_problems(language) for language in LANGUAGES if language != "en"}
        for language, found in problems.items():
            for problem in found:
                print(f"{language}: {problem}")
        return 1 if any(problems.values()) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
