"""Computed values as the arrays plotly takes."""

from __future__ import annotations

import numpy as np
import torch


def as_array(values, dtype=np.float64) -> np.ndarray:
    """A tensor (on any device) or a sequence as a numpy array of ``dtype`` (float32 where the screen needs no more:
    it halves what a heatmap sends)."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=dtype)
