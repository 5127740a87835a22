"""Cases whose outcome differs from PyTorch's today, each with its reason (reviewed like code).

Keys are case ids or ``fnmatch`` patterns over them. ``test_oracle.py`` checks that every case
listed here still differs (so a fix removes its entry) and that every pattern matches a case.
Reasons starting with ``bug:`` are kernel bugs to fix; the others are justified differences.
"""

_SET = ("justified: a tensor's storage is fixed at creation (ARCHITECTURE.md invariants), so "
        "set_ cannot make a tensor view another's storage; switchyard refuses with "
        "NotImplementedError")
_TORCH_BN = ("justified (PyTorch's bug): native_batch_norm.out / _native_batch_norm_legit.out "
             "with a non-contiguous input return wrong values (save_mean zeros, output not "
             "normalised by the batch statistics; with outs needing a resize it reads "
             "uninitialized memory); switchyard's equal PyTorch's functional overload")
KNOWN = {
    **{f"sort.{o}/float32/large": (
        "justified: an unstable sort (stable not True) orders equal values as its algorithm "
        "happens to; the values agree and the indices differ only between equal elements "
        "(checked when this entry was added); with stable=True they agree (sort.stable "
        "/stable_large)") for o in ("default", "stable")},
    "gelu.out/float32/contig/out_t": (
        "justified (PyTorch's bug): torch.ops.aten.gelu.out into a non-contiguous out of the "
        "right shape returns it unwritten (relu.out and sin.out write it); ours writes the "
        "GELU values, as the functional overload computes them"),
    "gelu.default/float32/special": (
        "justified: gelu(+inf) with approximate='none' is inf; PyTorch's vectorised CPU path "
        "returns NaN for it (its scalar path, e.g. a 1-element tensor, returns inf), so "
        "PyTorch disagrees with itself; ours is inf for every length"),
    "set.source_Tensor*": _SET,
    "set_.source_Tensor/*": _SET,
    "native_batch_norm.out/float32/slice": _TORCH_BN,
    "_native_batch_norm_legit.out/float32/slice": _TORCH_BN,
    "_native_batch_norm_legit.no_stats_out/float32/slice": _TORCH_BN,
}
