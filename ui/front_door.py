"""What Home offers a teacher walking in: a 50-minute route through the app, and per page the three
questions it answers. Thumbnails are each lesson's key figure (``python -m figures.export --thumbnails``).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from i18n import DEFAULT_LANGUAGE, N_, current_language

THUMBNAILS = Path(__file__).resolve().parent.parent / "assets" / "thumbnails"


PART, PRESENT = "part", "present"  # the URL keys of a page's open part (ui.lesson) and of presenter mode (ui.tour)


class Stop(NamedTuple):
    path: str  # a page of ui.pages
    minutes: int
    activity: str  # N_()-marked
    query: tuple[tuple[str, str], ...] = ()  # what the link sets: the part the activity needs, presenter mode


# A class of 50 minutes: enough on each page to ask one question and move one control. Each link opens the part
# (and mode) its activity needs; the part slugs are the lessons' own (tests check them, without importing torch here).
CLASS_PLAN: tuple[Stop, ...] = (
    Stop("app_pages/tour.py", 20, N_("Present the guided lesson (presenter mode): let the class vote on each question "
                                 "before you reveal the figure."), ((PRESENT, "1"),)),
    Stop("app_pages/frequencies.py", 8, N_("Pick a pair on the wavelength chart; add YaRN and compare the ratio "
                                       "chart beside it."), ((PART, "per-pair"),)),
    Stop("app_pages/decay.py", 4, N_("Add a larger base under “Bases b of this chart”: why does a larger base "
                                 "stretch the decay?"), ((PART, "bound"),)),
    Stop("app_pages/precision.py", 4, N_("Why do bfloat16 positions collide above 256? Count the exact ones at 8192.")),
    Stop("app_pages/maths.py", 4, N_("Open one derivation and its refuted variant: what does sympy check?")),
    Stop("app_pages/training.py", 8, N_("The stored runs: which RoPE method extrapolates best at 8×? Then, under "
                                    "Encodings, why does ALiBi barely move?"), ((PART, "methods"),)),
    Stop("app_pages/glossary.py", 2, N_("Leave the Glossary and References open for homework.")),
)

QUESTIONS: dict[str, tuple[str, str, str]] = {
    "app_pages/tour.py": (N_("Why does RoPE's score depend only on the distance between tokens?"),
                      N_("What breaks when a model runs past its training length, and how do PI, NTK-aware and "
                         "YaRN repair it?"),
                      N_("What do attention temperature and bfloat16 positions add to the story?")),
    "app_pages/frequencies.py": (N_("Which rotary pairs see angles they never saw in training?"),
                             N_("What does each context-extension method do to θᵢ, pair by pair?"),
                             N_("Why does NTK-aware keep the fast pairs and interpolate the slow one?")),
    "app_pages/decay.py": (N_("Does attention fade with distance under RoPE, and how fast?"),
                       N_("What does a larger base or a context-extension method do to the decay?"),
                       N_("Is the decay a property of every score, or only of an average?")),
    "app_pages/beta_base.py": (N_("In what sense is RoPE a number written in base β?"),
                           N_("Why does direct extrapolation fail where interpolation and base change do not?"),
                           N_("How much must the base grow to count s times further?")),
    "app_pages/precision.py": (N_("Which positions can bfloat16 and float16 store exactly?"),
                           N_("What happens to RoPE's angles when positions collide?"),
                           N_("Which order of operations keeps the logits right?")),
    "app_pages/family.py": (N_("How do sinusoidal, learned, ALiBi and T5 encodings place a token?"),
                        N_("What do ReRoPE, Dual Chunk Attention and log-n scaling change at long range?"),
                        N_("Which of them extrapolate, and why?")),
    "app_pages/maths.py": (N_("Why does RoPE's score depend only on m − n?"),
                       N_("Where do NTK-aware's base and YaRN's temperature come from?"),
                       N_("Which popular statements are wrong, and how does sympy show it?")),
    "app_pages/training.py": (N_("Which encodings survive sequences 8× longer than training?"),
                          N_("How do PI, NTK-aware and YaRN compare without fine-tuning?"),
                          N_("How much does a short fine-tune recover?")),
    "app_pages/rope_code.py": (N_("How does LLaMA's complex multiplication relate to transformers' rotate_half?"),
                           N_("Do the two forms give the same numbers?"),
                           N_("Why do interleaved and half-split pairings need permuted weights?")),
    "app_pages/caveats.py": (N_("What goes wrong when dynamic NTK meets a KV cache?"),
                         N_("How large must NTK-aware's s be to keep every angle familiar?"),
                         N_("What does ReRoPE cost at inference?")),
    "app_pages/lineage.py": (N_("Which four terms make up an attention score with absolute positions?"),
                         N_("What do Shaw, Transformer-XL, T5, DeBERTa and TUPE keep of them?"),
                         N_("Which other ways of encoding absolute position exist?")),
    "app_pages/check.py": (N_("Does my RoPE implementation match transformers to float32 precision?"),
                       N_("If not, which known bug reproduces my numbers?"),
                       N_("Where do my frequencies part from the expected ones?")),
    "app_pages/plan.py": (N_("Which rope_scaling do I set to run this model at N tokens?"),
                      N_("How large must the base be for that length?"),
                      N_("How many pairs and angles stay unseen?")),
    "app_pages/engines.py": (N_("What does vLLM, SGLang, llama.cpp or MLX compute for this config?"),
                         N_("Where does an engine differ from the model's own classes, and who says so?"),
                         N_("Which flags serve this model at N tokens in each engine?")),
    "app_pages/compare.py": (N_("How does a long-context variant's RoPE differ from its base model's?"),
                         N_("Which pairs change, and by how much?"),
                         N_("Which parameters differ?")),
    "app_pages/hybrid.py": (N_("Why do sliding-window layers keep a small base?"),
                        N_("Which layers of Gemma 3, EXAONE 4 and Llama 4 apply no position encoding?"),
                        N_("What is left for context extension to change, and what does Llama 4's attention "
                           "temperature do?")),
    "app_pages/mrope.py": (N_("Which of a head's pairs carry time, height and width?"),
                       N_("What positions do the tokens of an image get?"),
                       N_("How do Qwen2.5-VL's blocks and Qwen3-VL's alternating pairs differ?")),
    "app_pages/glossary.py": (N_("What does each symbol mean?"), N_("What is its formula?"), N_("Which pages use it?")),
    "app_pages/sources.py": (N_("Which paper introduced each method?"), N_("Which blog posts and code does the app "
                                                                       "follow?"), N_("Where can I read more?")),
}


def thumbnail(lesson: str) -> Path | None:
    """The lesson's thumbnail in the reader's language (``assets/thumbnails/<lang>/``, drawn with
    ``python -m figures.export --thumbnails assets/thumbnails/zh --lang zh``), else the English one, else None."""
    language = current_language()
    folders = (THUMBNAILS,) if language == DEFAULT_LANGUAGE else (THUMBNAILS / language, THUMBNAILS)
    return next((path for path in (folder / f"{lesson}.png" for folder in folders) if path.exists()), None)
