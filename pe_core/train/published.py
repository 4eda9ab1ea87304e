"""Published numbers the toy is compared with: Su Jianlin's extrapolation tables.

A GAU language model of about 100 M parameters trained at 512 tokens and tested at 4,096 (8×),
next-token accuracy in percent, no fine-tuning: "Baseline", "PI-RoPE" and "NTK-RoPE", each with
and without log n, from Su 2023a (kexue.fm/archives/9675, repeated in 9706 and 9708 as
"NTK-RoPE-old"), and "ReRoPE-w256" from Su 2023b (kexue.fm/archives/9708). In 9708 Su spells out
the two kinds of log n: "log n" rows were trained with the factor (their accuracy at 512 is 49.40
rather than 49.41), "log n†" rows apply max(1, log₅₁₂ n) only at test time, as the toy does.
"""

from __future__ import annotations

from typing import NamedTuple

SU_TRAIN_LENGTH, SU_TEST_LENGTH = 512, 4096


class PublishedRow(NamedTuple):
    method: str  # the key of pe_core.train.evaluate.INFERENCE_METHODS the toy runs for this row
    label: str  # the row's name in the post
    at_train: float  # accuracy (%) at the training length, 512
    repeated: float  # at 4,096 on text that repeats
    at_test: float  # at 4,096 on text that does not repeat (the toy's case)
    trained_logn: bool  # log n was part of pre-training (the toy applies it only at inference)
    source: str  # a key of the References page


SU_TABLE: tuple[PublishedRow, ...] = (
    PublishedRow("direct", "Baseline", 49.41, 24.17, 23.16, False, "su_beta_base"),
    PublishedRow("direct_logn", "Baseline-log n", 49.40, 24.60, 24.02, True, "su_beta_base"),
    PublishedRow("pi", "PI-RoPE", 49.41, 15.04, 13.54, False, "su_beta_base"),
    PublishedRow("pi_logn", "PI-RoPE-log n", 49.40, 14.99, 16.51, True, "su_beta_base"),
    PublishedRow("ntk", "NTK-RoPE", 49.41, 51.28, 39.27, False, "su_beta_base"),
    PublishedRow("ntk_logn", "NTK-RoPE-log n", 49.40, 61.71, 43.75, True, "su_beta_base"),
    PublishedRow("rerope", "ReRoPE-w256", 49.41, 77.90, 48.48, False, "rerope"),
    PublishedRow("rerope_logn", "ReRoPE-w256-log n†", 49.41, 82.40, 48.85, False, "rerope"),
)
