"""A package's public names imported on first use, so a command line that only answers ``--help`` does not wait
for torch (``pe_core``, ``pe_core.check``, ``pe_core.engines``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_names(package: str, namespace: dict, public: Mapping[str, tuple[str, ...]]
               ) -> tuple[list[str], Callable[[str], object], Callable[[], list[str]]]:
    """(``__all__``, ``__getattr__``, ``__dir__``) for ``package`` whose ``public`` maps module -> names; a name is
    imported from its module when first asked for, then kept in ``namespace`` (the package's globals)."""
    where = {name: module for module, names in public.items() for name in names}
    exported = sorted(where)

    def getattr_(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(exported))

    return exported, getattr_, dir_
