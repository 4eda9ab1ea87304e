"""Reading a config.json by the model's own transformers code (pe_core.model_code): warm in this process, and in a
fresh process (the transformers import included) with and without the reading kept on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import Case

GROUP = "core: config reader"
ROOT = Path(__file__).resolve().parent.parent
_MIMO = {"model_type": "mimo_v2_flash"}  # 48 layers: 39 sliding, 9 full
_GLM5 = {"model_type": "glm_moe_dsa"}  # 78 layers of MLA with a sparse indexer
_KEPT = tempfile.mkdtemp(prefix="pe-readings-")


def _warm(config: dict):
    from pe_core.config import _model_code_map_of

    return _model_code_map_of(json.dumps(config, sort_keys=True), None)


def _fresh_process(cache: str):
    code = f"from pe_core.config import layer_map; layer_map({_MIMO!r})"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True,
                   env=dict(os.environ, PE_READING_CACHE=cache))


CASES = [
    Case(GROUP, "MiMo-V2-Flash read by its own classes, warm process (config, rotary, 48 layers run on meta)",
         lambda: _warm(_MIMO)),
    Case(GROUP, "GLM-5 (glm_moe_dsa) read by its own classes, warm process (78 layers)", lambda: _warm(_GLM5)),
    Case(GROUP, "MiMo-V2-Flash in a fresh process, transformers import included (nothing kept on disk)",
         lambda: _fresh_process("off"), repeats=3),
    Case(GROUP, "MiMo-V2-Flash in a fresh process whose reading an earlier one kept on disk",
         lambda: _fresh_process(_KEPT), repeats=3),
]
