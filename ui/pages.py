"""The app's page registry: app.py builds the navigation from it and Home lists it.

A page is listed only when its file exists, so nothing unfinished is ever shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


class PageInfo(NamedTuple):
    path: str  # relative to the repository root
    title: str
    icon: str
    section: str
    summary: str
    slug: str = ""  # the URL path; defaults to the file name
    lesson: str = ""  # the lesson the page shows (its figures, settings and benchmarks)

    @property
    def url_path(self) -> str:
        """Where the page lives in the browser ('' for Home)."""
        if self.path == "pages/home.py":
            return ""
        return self.slug or Path(self.path).stem


PAGES = (
    PageInfo("pages/home.py", "Home", ":material/home:", "Start",
             "What each page teaches and where to begin."),
    PageInfo("pages/frequencies.py", "θ heatmaps & scaling methods", ":material/grid_on:", "RoPE and its extensions",
             "How direct extrapolation, PI, NTK-aware, dynamic NTK, NTK-by-parts, YaRN, Llama-3, LongRoPE "
             "and a base change reshape RoPE's rotation angles, dimension by dimension.", lesson="frequencies"),
    PageInfo("pages/decay.py", "Long-range decay", ":material/trending_down:", "RoPE and its extensions",
             "RoFormer's decay bound, sinusoidal dot products and real q·k against distance."),
    PageInfo("pages/beta_base.py", "RoPE as a β-base number", ":material/pin:", "RoPE and its extensions",
             "Positions as digits in base β: extrapolate, interpolate, or change the base."),
    PageInfo("pages/precision.py", "Low-precision positions", ":material/blur_on:", "RoPE and its extensions",
             "Why bfloat16 positions collide above 256 and what that does to RoPE's angles."),
    PageInfo("pages/family.py", "The wider family", ":material/family_history:", "Other encodings",
             "Sinusoidal, learned, ALiBi, T5 buckets, ReRoPE, Dual Chunk Attention and log-n scaling."),
    PageInfo("pages/maths.py", "Derivations (sympy-checked)", ":material/functions:", "Maths",
             "Every formula the app uses, derived step by step and verified by sympy.", slug="derivations"),
    PageInfo("pages/training.py", "Train a tiny transformer", ":material/model_training:", "Experiment",
             "Train a small model live at a short length and watch each encoding extrapolate.", lesson="training"),
)


def available_pages() -> list[PageInfo]:
    return [page for page in PAGES if (ROOT / page.path).exists()]
