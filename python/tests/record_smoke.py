"""Records PyTorch's outcomes of ``smoke_cases.CASES`` into ``fixtures/smoke_torch.json``.

Run from the repository root with a Python that has torch:
``/tmp/torchref/bin/python python/tests/record_smoke.py``.
"""

import json
import pathlib
import sys
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import torch  # noqa: E402

from smoke_cases import CASES  # noqa: E402
from outcome import outcome  # noqa: E402


def main():
    warnings.simplefilter("ignore")
    out = {
        "torch_version": torch.__version__,
        "outcomes": {case: outcome(torch, case) for case in CASES},
    }
    path = pathlib.Path(__file__).parent / "fixtures" / "smoke_torch.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(CASES)} outcomes to {path}")


if __name__ == "__main__":
    main()
