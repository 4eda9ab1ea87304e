"""The practitioner CLIs' arguments, kept apart from the torch code they drive, so that ``--help`` and a bad
argument are answered before torch is imported (``python -m pe_core.check`` and ``python -m pe_core.plan`` parse
their arguments with these parsers first)."""

from __future__ import annotations

import argparse

LAYOUTS = ("half", "interleaved")  # how a pair's two dimensions sit in a head
FORMS = ("auto", "pairs", "dims")  # how a list of numbers is read: by its count, one per pair, one per dimension
# The longest target a plan accepts unless the reader raises the limit (``max_target``, ``--max-target``, the
# page's control): a plan sums Σᵢ cos(m·θᵢ) at every distance m < L′ for each method and scans bases for b*(L′),
# so its time grows with L′ (about 13 s at 1,048,576 and 38 s at 4,194,304 for a 128-dim head on a busy 2-core
# machine).
MAX_TARGET = 1 << 20
# The highest the limit goes: 16,777,216 tokens, above the longest context a model has announced (Llama 4
# Scout's 10M); a plan there takes minutes.
TARGET_CEILING = 1 << 24

_STRICT = ("refuse a config with keys nothing reads, a warning from its config class, or a disagreement between "
           "pe_core's formulas and the model's own rotary class")
_READ_AS = ("read a model type this transformers lacks with another family's classes (the one its auto_map names, "
            "say); every key they do not read is listed")
_CONFIG = "a preset name (e.g. 'Llama-3.1-8B'), a path to config.json, or its JSON text"


def check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pe_core.check",
        description="Check a RoPE implementation's inverse frequencies against transformers and name the bug.")
    parser.add_argument("config", help=_CONFIG)
    parser.add_argument("--inv-freq", metavar="FILE",
                        help="your θᵢ: .json, .csv, .txt, .npy, or a .pt / .bin / .safetensors state dict with inv_freq "
                             "buffers; one per pair, or one per rotated dimension")
    parser.add_argument("--probe", metavar="DIR",
                        help="write seeded queries, keys and positions (and a script that runs your rotary on them) "
                             "to DIR; with --rotated, the probe in DIR is the one checked against")
    parser.add_argument("--rotated", metavar="FILE",
                        help="your rotary's output on the probe: rotated q and k, or cos and sin tables "
                             "(.pt, .safetensors or .npz)")
    parser.add_argument("--seed", type=int, default=0, help="the probe's seed (default 0)")
    parser.add_argument("--attention-factor", type=float, metavar="X",
                        help="the factor your RoPE multiplies cos and sin by (transformers' attention_scaling)")
    parser.add_argument("--seq-len", type=int, metavar="N", help="the sequence length your θᵢ were computed for")
    parser.add_argument("--layout", choices=LAYOUTS, default=None,
                        help="the pairing the checkpoint expects (per-dimension input only; default: the model's own, "
                             "e.g. interleaved for DeepSeek-V3 and GLM-4, half-split for Llama)")
    parser.add_argument("--layer-type", default=None, metavar="TYPE",
                        help="which kind of layer to check in a hybrid model, by transformers' name (full_attention, "
                             "sliding_attention, chunked_attention, ...; default: every kind the file has θᵢ for)")
    parser.add_argument("--form", choices=FORMS, default="auto", help="how to read the numbers (default: by count)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--strict", action="store_true", help=_STRICT)
    parser.add_argument("--read-as", metavar="MODEL_TYPE", help=_READ_AS)
    return parser


def plan_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pe_core.plan",
                                     description="Plan a RoPE context extension for a model and a target length.")
    parser.add_argument("config", help=_CONFIG)
    parser.add_argument("--target", type=int, required=True, metavar="N", help="the context length to reach")
    parser.add_argument("--max-target", type=int, default=MAX_TARGET, metavar="N",
                        help=f"the longest target to accept (default {MAX_TARGET:,}, at most {TARGET_CEILING:,}); "
                             "a plan's time grows with the target")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument("--out", metavar="FILE", help="also write the JSON plan (with every patched config.json) here")
    parser.add_argument("--strict", action="store_true", help=_STRICT)
    parser.add_argument("--read-as", metavar="MODEL_TYPE", help=_READ_AS)
    return parser


ENGINE_CHOICES = ("transformers", "vllm", "sglang", "llama.cpp", "llama.cpp-b5731", "mlx-lm")


def engines_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pe_core.engines",
        description="What transformers, vLLM, SGLang, llama.cpp and MLX-LM each compute for a config's RoPE, where "
                    "they differ from the model's own classes, and (with --target) how to set each for a length.")
    parser.add_argument("config", help=_CONFIG)
    parser.add_argument("--engine", choices=ENGINE_CHOICES, help="one engine, beside transformers (default: all)")
    parser.add_argument("--seq-len", type=int, metavar="N",
                        help="the sequence length (default: the config's max_position_embeddings)")
    parser.add_argument("--context", type=int, metavar="N",
                        help="the context the engine allocates (vLLM --max-model-len, llama.cpp --ctx-size; "
                             "default: each engine's own)")
    parser.add_argument("--layer-type", metavar="TYPE", help="one kind of layer (full_attention, sliding_attention, ...)")
    parser.add_argument("--target", type=int, metavar="N", help="also print each engine's recipe for N tokens")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser
