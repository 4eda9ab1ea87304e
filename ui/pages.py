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
    PageInfo("pages/tour.py", "RoPE and long context in 12 steps", ":material/route:", "Start",
             "A guided lesson: each step sets up one figure, asks you to predict, then reveals why. With a "
             "presenter mode for class.", slug="tour"),
    PageInfo("pages/frequencies.py", "θ heatmaps & scaling methods", ":material/grid_on:", "RoPE and its extensions",
             "How direct extrapolation, PI, NTK-aware, dynamic NTK, NTK-by-parts, YaRN, Llama-3, LongRoPE "
             "and a base change reshape RoPE's rotation angles, dimension by dimension.", lesson="frequencies"),
    PageInfo("pages/rope_code.py", "RoPE in code: complex numbers and rotate_half", ":material/code:",
             "RoPE and its extensions",
             "LLaMA's precompute_freqs_cis and apply_rotary_emb next to transformers' rotate_half, number for "
             "number, and why the two pairings need permuted weights.", lesson="rope_code"),
    PageInfo("pages/decay.py", "Long-range decay", ":material/trending_down:", "RoPE and its extensions",
             "RoFormer's decay bound, sinusoidal dot products and real q·k against distance.", lesson="decay"),
    PageInfo("pages/beta_base.py", "RoPE as a β-base number", ":material/pin:", "RoPE and its extensions",
             "Positions as digits in base β: extrapolate, interpolate, or change the base.", lesson="beta_base"),
    PageInfo("pages/caveats.py", "Caveats of context extension", ":material/warning:", "RoPE and its extensions",
             "Dynamic NTK's KV cache measured, how large NTK-aware's s must be, PI's g(m) = m/s, and ReRoPE's "
             "inference cost computed.", lesson="caveats"),
    PageInfo("pages/precision.py", "Low-precision positions", ":material/blur_on:", "RoPE and its extensions",
             "Why bfloat16 positions collide above 256 and what that does to RoPE's angles.", lesson="precision"),
    PageInfo("pages/family.py", "The wider family", ":material/family_history:", "Other encodings",
             "Sinusoidal, learned, ALiBi, T5 buckets, ReRoPE, Dual Chunk Attention and log-n scaling.",
             lesson="family"),
    PageInfo("pages/lineage.py", "From absolute to relative position", ":material/account_tree:", "Other encodings",
             "The four terms of an attention score and what Shaw, Transformer-XL, T5, DeBERTa and TUPE keep of "
             "them; FLOATER, multiplicative, hierarchical, complex-order and CNN positions.", lesson="lineage"),
    PageInfo("pages/maths.py", "Derivations (sympy-checked)", ":material/functions:", "Maths",
             "Every formula the app uses, derived step by step and verified by sympy.", slug="derivations",
             lesson="derivations"),
    PageInfo("pages/check.py", "Check a RoPE implementation", ":material/fact_check:", "For practitioners",
             "Paste or upload your θᵢ: a verdict against transformers to float32 precision, and the known bug that "
             "reproduces them.", lesson="check"),
    PageInfo("pages/plan.py", "Plan a context extension", ":material/straighten:", "For practitioners",
             "For a model and a target length: each method's parameters, the base the length needs, what stays "
             "unseen, and config blocks to download.", lesson="plan"),
    PageInfo("pages/compare.py", "Compare two RoPE configs", ":material/compare_arrows:", "For practitioners",
             "Two configs side by side: θ ratio per pair, wavelengths, attention factors, every parameter that "
             "differs.", lesson="compare"),
    PageInfo("pages/training.py", "Train a tiny transformer", ":material/model_training:", "Experiment",
             "Train a small model live at a short length and watch each encoding extrapolate.", lesson="training"),
    PageInfo("pages/glossary.py", "Glossary of symbols", ":material/menu_book:", "Reference",
             "Every symbol the app shows: its name, formula and meaning."),
    PageInfo("pages/sources.py", "References", ":material/library_books:", "Reference",
             "The papers, posts and code every claim here cites.", slug="references"),
)


def available_pages() -> list[PageInfo]:
    return [page for page in PAGES if (ROOT / page.path).exists()]
