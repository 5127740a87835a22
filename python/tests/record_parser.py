"""Records PyTorch's outcomes of ``parser_cases.CASES`` and ``SWEEP`` into
``fixtures/parser_torch.json``.

Run from the repository root with a Python that has torch:
``/tmp/torchref/bin/python python/tests/record_parser.py``.
"""

import json
import pathlib
import sys
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import torch  # noqa: E402

from outcome import outcome  # noqa: E402
from parser_cases import CASES, SWEEP  # noqa: E402


def main():
    warnings.simplefilter("ignore")
    out = {
        "torch_version": torch.__version__,
        "outcomes": {case: outcome(torch, case) for case in CASES + SWEEP},
    }
    path = pathlib.Path(__file__).parent / "fixtures" / "parser_torch.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out['outcomes'])} outcomes to {path}")


if __name__ == "__main__":
    main()
