"""How numbers are written in controls, captions and file names: one function per kind of number."""

from __future__ import annotations


def base_text(value: float) -> str:
    """10000.0 -> '10,000'."""
    return f"{value:,.0f}"


def length_text(value: int | float) -> str:
    """16384 -> '16,384'."""
    return f"{value:,.0f}"


def scale_text(value: float) -> str:
    """4.0 -> '4×'."""
    return f"{value:g}×"


def number_text(value: float) -> str:
    """A whole number with separators, else up to 4 decimals without trailing zeros."""
    if abs(value - round(value)) < 1e-9 and abs(value) < 1e15:
        return f"{round(value):,}"
    if abs(value) >= 1e15:
        return f"{value:.6g}"
    return f"{value:,.4f}".rstrip("0").rstrip(".")


def superscript(number: int) -> str:
    """63 -> '⁶³': an exponent in running text (2¹³, β⁶³)."""
    return str(number).translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))


def subscript(number: int) -> str:
    """63 -> '₆₃': an index in running text (θ₆₃)."""
    return str(number).translate(str.maketrans("0123456789-", "₀₁₂₃₄₅₆₇₈₉₋"))
