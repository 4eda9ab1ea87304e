"""The app's page registry: app.py builds the navigation from it and Home lists it.

A page is listed only when its file exists, so nothing unfinished is ever shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from i18n import N_

ROOT = Path(__file__).resolve().parent.parent


class PageInfo(NamedTuple):
    path: str  # relative to the repository root
    title: str  # N_()-marked, like section and summary
    icon: str
    section: str
    summary: str
    slug: str = ""  # the URL path; defaults to the file name
    lesson: str = ""  # the lesson the page shows (its figures, settings and benchmarks)
    charts: bool = True  # the page draws charts (the browser then loads plotly.js as the page starts)

    @property
    def url_path(self) -> str:
        """Where the page lives in the browser ('' for Home)."""
        if self.path == "app_pages/home.py":
            return ""
        return self.slug or Path(self.path).stem


PAGES = (
    PageInfo("app_pages/home.py", N_("Home"), ":material/home:", N_("Start"),
             N_("What each page teaches and where to begin."), charts=False),
    PageInfo("app_pages/tour.py", N_("RoPE and long context in 12 steps"), ":material/route:", N_("Start"),
             N_("A guided lesson: each step sets up one figure, asks you to predict, then reveals why. With a "
             "presenter mode for class."), slug="tour"),
    PageInfo("app_pages/frequencies.py", N_("θ heatmaps & scaling methods"), ":material/grid_on:", N_("RoPE and its extensions"),
             N_("How direct extrapolation, PI, NTK-aware, dynamic NTK, NTK-by-parts, YaRN, Llama-3, LongRoPE "
             "and a base change reshape RoPE's rotation angles, dimension by dimension."), lesson="frequencies"),
    PageInfo("app_pages/rope_code.py", N_("RoPE in code: complex numbers and rotate_half"), ":material/code:",
             N_("RoPE and its extensions"),
             N_("LLaMA's precompute_freqs_cis and apply_rotary_emb next to transformers' rotate_half, number for "
             "number, and why the two pairings need permuted weights."), lesson="rope_code"),
    PageInfo("app_pages/decay.py", N_("Long-range decay"), ":material/trending_down:", N_("RoPE and its extensions"),
             N_("RoFormer's decay bound, sinusoidal dot products and real q·k against distance."), lesson="decay"),
    PageInfo("app_pages/beta_base.py", N_("RoPE as a β-base number"), ":material/pin:", N_("RoPE and its extensions"),
             N_("Positions as digits in base β: extrapolate, interpolate, or change the base."), lesson="beta_base"),
    PageInfo("app_pages/caveats.py", N_("Caveats of context extension"), ":material/warning:", N_("RoPE and its extensions"),
             N_("Dynamic NTK's KV cache measured, how large NTK-aware's s must be, PI's g(m) = m/s, and ReRoPE's "
             "inference cost computed."), lesson="caveats"),
    PageInfo("app_pages/precision.py", N_("Low-precision positions"), ":material/blur_on:", N_("RoPE and its extensions"),
             N_("Why bfloat16 positions collide above 256 and what that does to RoPE's angles."), lesson="precision"),
    PageInfo("app_pages/hybrid.py", N_("Hybrid models: windows, NoPE and context extension"), ":material/layers:",
             N_("RoPE and its extensions"),
             N_("Why sliding-window layers keep a small base, which models drop RoPE from their global layers, what "
                "that leaves context extension to change, and Llama 4's attention temperature."), lesson="hybrid"),
    PageInfo("app_pages/mrope.py", N_("Multimodal RoPE"), ":material/view_in_ar:", N_("RoPE and its extensions"),
             N_("Which pairs carry time, height and width in Qwen2.5-VL, Qwen3-VL and Qwen3.5, and the positions of "
                "an image's tokens."), lesson="mrope"),
    PageInfo("app_pages/family.py", N_("The wider family"), ":material/family_history:", N_("Other encodings"),
             N_("Sinusoidal, learned, ALiBi, T5 buckets, ReRoPE, Dual Chunk Attention and log-n scaling."),
             lesson="family"),
    PageInfo("app_pages/lineage.py", N_("From absolute to relative position"), ":material/account_tree:", N_("Other encodings"),
             N_("The four terms of an attention score and what Shaw, Transformer-XL, T5, DeBERTa and TUPE keep of "
             "them; FLOATER, multiplicative, hierarchical, complex-order and CNN positions."), lesson="lineage"),
    PageInfo("app_pages/maths.py", N_("Derivations (sympy-checked)"), ":material/functions:", N_("Maths"),
             N_("Every formula the app uses, derived step by step and verified by sympy."), slug="derivations",
             lesson="derivations"),
    PageInfo("app_pages/check.py", N_("Check a RoPE implementation"), ":material/fact_check:", N_("For practitioners"),
             N_("Paste or upload your θᵢ: a verdict against transformers to float32 precision, and the known bug "
                "that reproduces them."), lesson="check"),
    PageInfo("app_pages/plan.py", N_("Plan a context extension"), ":material/straighten:", N_("For practitioners"),
             N_("For a model and a target length: each method's parameters, the base the length needs, what stays "
                "unseen, and config blocks to download."), lesson="plan"),
    PageInfo("app_pages/compare.py", N_("Compare two RoPE configs"), ":material/compare_arrows:", N_("For practitioners"),
             N_("Two configs side by side: θ ratio per pair, wavelengths, attention factors, every parameter that "
                "differs."), lesson="compare"),
    PageInfo("app_pages/engines.py", N_("What each serving engine computes"), ":material/dns:", N_("For practitioners"),
             N_("transformers, vLLM, SGLang, llama.cpp and MLX-LM side by side for one config: θᵢ, factors, context "
                "limits, every difference with its source, and each engine's recipe for a target length."),
             lesson="engines"),
    PageInfo("app_pages/training.py", N_("Train a tiny transformer"), ":material/model_training:", N_("Experiment"),
             N_("Train a small model live at a short length and watch each encoding extrapolate."), lesson="training"),
    PageInfo("app_pages/glossary.py", N_("Glossary of symbols"), ":material/menu_book:", N_("Reference"),
             N_("Every symbol the app shows: its name, formula and meaning."), charts=False),
    PageInfo("app_pages/sources.py", N_("References"), ":material/library_books:", N_("Reference"),
             N_("The papers, posts and code every claim here cites."), slug="references", charts=False),
)


def available_pages() -> list[PageInfo]:
    return [page for page in PAGES if (ROOT / page.path).exists()]
