"""What each serving engine computes for a config, side by side: θᵢ, the cos/sin factor, the softmax scale, the
context limit, LongRoPE's choice, every difference from the model's own transformers classes (numbered and cited),
and each engine's recipe for a target length (``pe_core.engines``)."""

from __future__ import annotations

import dataclasses
import functools

import torch

from figures import engines as draw
from i18n import N_, _, current_language
from lessons.base import FigureSpec, Lesson, SettingsError, figure_registry, setting
from lessons.model_source import MODEL, ModelSettings, config_of, preset_names
from pe_core.cli_args import TARGET_CEILING
from pe_core.engines import (
    CHOICE_TITLES,
    ENGINES,
    REFERENCE,
    EngineResult,
    Recipe,
    engine_results,
    recipe_config,
    recipes,
)

RUN = "run"
TARGET = "target"
LONGEST = TARGET_CEILING


@dataclasses.dataclass(frozen=True)
class Settings(ModelSettings):
    preset: str = setting("gpt-oss-20b", N_("Model"), key="preset", widget="selectbox", group=MODEL,
                          options=preset_names(), when={"source": ("preset",)},
                          examples=("Phi-3.5-mini-instruct", "DeepSeek-V3"))
    seq_len: int = setting(0, N_("Sequence length (0: the config's max_position_embeddings)"), key="len",
                           widget="number", group=RUN, min_value=0, max_value=LONGEST, step=1024, examples=(2048,),
                           help=N_("The tokens in the sequence: transformers' dynamic NTK and LongRoPE follow it."))
    context: int = setting(0, N_("Context the engine allocates (0: each engine's default)"), key="ctx",
                           widget="number", group=RUN, min_value=0, max_value=LONGEST, step=1024, examples=(131072,),
                           help=N_("vLLM's --max-model-len, llama.cpp's --ctx-size: LongRoPE's factors follow it "
                                   "there."))
    target: int = setting(0, N_("Target length for the recipes (0: twice the length the config is built for)"),
                          key="target", widget="number", group=TARGET, min_value=0, max_value=LONGEST, step=1024,
                          examples=(524288,))


class Result:
    def __init__(self, settings: Settings) -> None:
        from pe_core.config import extended_length_of, layer_map

        self.settings = settings
        self.config = config_of(settings.source, settings.preset, settings.config)
        self._by_language: dict[str, tuple[list[EngineResult], list[Recipe]]] = {}
        try:
            self.model = layer_map(self.config)
            self.target = settings.target or 2 * extended_length_of(self.model)
            self._computed()
        except ValueError as err:
            raise SettingsError(str(err)) from err
        self.seq_len = self.results[0].seq_len

    def _computed(self) -> tuple[list[EngineResult], list[Recipe]]:
        """The engines' results and recipes, whose sentences are in the reader's language (the result is cached
        across languages, so they are made once per language)."""
        language = current_language()
        if language not in self._by_language:
            settings = self.settings
            self._by_language[language] = (
                engine_results(self.config, settings.seq_len or None, context=settings.context or None,
                               model=self.model),
                recipes(self.config, self.target, model=self.model))
        return self._by_language[language]

    @property
    def results(self) -> list[EngineResult]:
        return self._computed()[0]

    @property
    def recipes(self) -> list[Recipe]:
        return self._computed()[1]

    @property
    def layer_types(self) -> list[str]:
        seen = []
        for result in self.results:
            if result.layer_type not in seen:
                seen.append(result.layer_type)
        return seen

    def of_kind(self, layer_type: str) -> list[EngineResult]:
        return [r for r in self.results if r.layer_type == layer_type]

    def rows(self, layer_type: str) -> list[dict]:
        """The side-by-side table: one row per engine."""
        rows = []
        for result in self.of_kind(layer_type):
            engine = ENGINES[result.engine]
            theta = result.inv_freq
            rows.append({
                _("engine"): engine.title, _("version"): result.versions,
                _("θ₀"): "" if theta is None else f"{float(theta[0]):.6g}",
                _("θ last"): "" if theta is None else f"{float(theta[-1]):.6g}",
                _("cos/sin ×"): f"{result.attention_factor:.5f}" if result.supported else "",
                _("softmax ×"): f"{result.softmax_scale:.5f}" if result.supported else "",
                _("pairing"): result.pairing,
                _("context limit"): "-" if result.context_limit is None else f"{result.context_limit:,}",
                _("LongRoPE factors"): _choice_title(result.factor_choice),
                _("differences"): len(result.divergences),
                _("note"): result.note or "",
            })
        return rows

    def divergence_lines(self, layer_type: str) -> list[str]:
        """One bullet per difference: the engine, its number within that engine's list, the sentence, the source."""
        lines = []
        for result in self.of_kind(layer_type):
            title = f"{ENGINES[result.engine].title} {result.versions}"
            for number, divergence in enumerate(result.divergences, 1):
                lines.append(f"- **{title} · {number}.** {divergence.text} `{divergence.source}`")
        return lines

    def ratios(self, layer_type: str) -> list[tuple]:
        results = self.of_kind(layer_type)
        reference = next((r for r in results if r.engine == REFERENCE and r.inv_freq is not None), None)
        curves = []
        for result in results:
            if result.engine == REFERENCE:
                continue
            ratio = None if reference is None or result.inv_freq is None else result.inv_freq / reference.inv_freq
            curves.append((result.engine, f"{ENGINES[result.engine].title} {result.versions}", ratio))
        return curves


    @functools.cached_property
    def recipe_thetas(self) -> tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(layer type, plain θᵢ = b^(−2i/d), the config's θᵢ, the recipe's θᵢ) at the target length, for the layers
        context extension scales."""
        from pe_core.config import layer_map
        from pe_core.rope import default_inv_freq, rope_frequencies

        kind = self.model.default_kind
        spec = kind.spec
        patched = layer_map(recipe_config(self.config, self.target, self.model)).kind(kind.layer_type).spec
        plain = default_inv_freq(spec.base, spec.rotary_dim)
        return (kind.layer_type, plain, rope_frequencies(spec, self.target).inv_freq,
                rope_frequencies(patched, self.target).inv_freq)


def _choice_title(choice: str | None) -> str:
    return "" if choice is None else _(CHOICE_TITLES[choice])


def compute(settings: Settings) -> Result:
    return Result(settings)


def _ratio(result: Result, style):
    layer_type = result.layer_types[0] if len(result.layer_types) == 1 else _default_kind(result)
    return draw.engines_ratio_figure(result.ratios(layer_type), layer_type=layer_type, seq_len=result.seq_len,
                                     context=result.settings.context or None)


def _recipe(result: Result, style):
    layer_type, plain, own, patched = result.recipe_thetas
    return draw.recipe_figure(own / plain, patched / plain, layer_type=layer_type, target=result.target)


def _default_kind(result: Result) -> str:
    kinds = result.layer_types
    return max(kinds, key=lambda kind: sum(len(r.divergences) for r in result.of_kind(kind)))


def _ratio_caption(result: Result) -> str:
    return _("Each engine's θᵢ divided by transformers' on the {layer_type} layers at {seq_len:,} tokens; 1 means "
             "the same angle. A red cross marks each pair that differs by more than one part in a million.").format(
        layer_type=_default_kind(result) if len(result.layer_types) > 1 else result.layer_types[0],
        seq_len=result.seq_len)


FIGURES = figure_registry(
    FigureSpec("ratio", draw.ENGINES_RATIO_TITLE, _ratio, groups=(MODEL, RUN), caption=_ratio_caption),
    FigureSpec("recipe", draw.RECIPE_TITLE, _recipe, groups=(MODEL, TARGET),
               caption=N_("θᵢ divided by plain RoPE's b^(−2i/d): 1 keeps a pair, 1/s interpolates it. The recipe's "
                          "line is the same in every engine that reads the block as transformers does.")),
)

LESSON = Lesson(
    name="engines",
    title=N_("What each serving engine computes"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("transformers, vLLM, SGLang, llama.cpp and MLX-LM side by side for one config: θᵢ, the cos/sin and "
               "softmax factors, the context limit, each difference from the model's own classes with its source, "
               "and each engine's recipe for a target length."),
    max_results=8,
)

__all__ = ["LESSON", "Settings", "compute"]
