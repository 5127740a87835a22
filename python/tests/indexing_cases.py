"""Cases of ``test_indexing.py``: indexing expressions read (with whether the result shares
storage with ``x``, ``f`` and ``m``), and assigned (the target's values and ``_version``
afterwards). ``x`` is int64 (2, 3, 4), ``f`` float32 (2, 3), ``z`` a 0-dim float."""

READ = [
    "x[0]", "x[1]", "x[-1]", "x[-2]", "x[2]", "x[-3]", "x[2**63 - 1]", "x[-2**63]", "x[2**70]",
    "x[0, 1]", "x[0, 1, 2]", "x[0, 1, 2, 3]", "x[:, 1]", "x[:, 5]", "x[..., 3]", "x[..., 4]",
    "x[1:]", "x[:1]", "x[-1:]", "x[::2]", "x[:, ::2]", "x[:, 1::2, ::3]", "x[-10:10]", "x[1:0]",
    "x[5:]", "x[::-1]", "x[::0]", "x[0:2]", "x[:]", "x[:, :]", "x[0:2**70]", "x[-2**70:]",
    "x[None]", "x[None, None]", "x[:, None]", "x[..., None]", "x[None, ..., None]",
    "x[1, None, ::3]", "x[...]", "x[..., ...]", "x[()]", "x[..., 0, ...]",
    "x[True]", "x[False]", "x[True, 0]", "x[0, False]", "x[None, True]",
    "x[[0, 1]]", "x[[1]]", "x[[]]", "x[[0, 1], [1, 2]]", "x[[0, 1], 1]", "x[0, [0, 2]]",
    "x[:, [0, 1], [1, 2]]", "x[[0, 1], :, [1, 2]]", "x[0, [0, 1], 1:]", "x[[[0, 1], [1, 0]]]",
    "x[[0], [[1], [2]]]", "x[[0, True]]", "x[[True, False]]", "x[[True]]", "x[[1.5]]",
    "x[[0, slice(None)]]", "x[[0, None]]", "x[[0, 5]]", "x[[-1, -2]]",
    "x[torch.tensor(1)]", "x[torch.tensor(-1)]", "x[torch.tensor(5)]", "x[torch.tensor([1])]",
    "x[torch.tensor([[0, 1]]), 0]", "x[torch.tensor([0, 1], dtype=torch.int32)]",
    "x[torch.tensor([], dtype=torch.long)]", "x[torch.tensor([1.0])]", "x[torch.tensor(1.5)]",
    "x[torch.tensor(True)]", "x[torch.tensor(False)]", "x[torch.tensor(0, dtype=torch.uint8)]",
    "x[torch.tensor([2])]", "x[:, torch.tensor([3])]", "x[m]", "x[m, 0]", "x[m, 1:]",
    "x[x > 5]", "x[0, x[0] > 5]", "x[m, torch.tensor([0, 1, 2, 3])]", "i[b]", "i[~b]",
    "i[torch.tensor([True, False])]", "f[f > 2]", "f[:, b]", "f[..., [0, 2]]", "f[None, [1], None]",
    "z[0]", "z[1]", "z[...]", "z[None]", "z[True]", "z[False]", "z[()]", "z[:]", "z[0,]",
    "x[1.5]", "x['a']", "x[{}]", "x[object()]", "x[1:2:0.5]", "x[:, 1.5]", "e[0]", "e[:, 1]",
    "e[e > 0]", "x[0][1][2]", "x[zi - 1]", "x[:zi]", "x[zi:, zi]",
    # non-contiguous and expanded inputs
    "A.t.default(f)[1]", "A.t.default(f)[:, 1]", "A.t.default(f)[[0, 2]]", "A.t.default(f)[1:, ::2]",
    "A.t.default(f)[A.t.default(f) > 2]", "A.permute.default(x, [2, 0, 1])[1, :, ::2]",
    "A.expand.default(i, [2, 3])[1]", "A.expand.default(i, [2, 3])[:, [0, 2]]",
    "x[:, :, 1][[1, 0]]", "x[1][m]", "x[..., [True, False, True, False]]", "x[[[True, False, True], [False, True, True]]]",
    "x[torch.tensor([[0], [1]]), torch.tensor([[0, 1, 2]])]", "x[None, 0, None, [1, 2]]",
    "x[0, ..., None, [1, 2]]", "x[[0, 1], None, [0, 1]]", "x[:, [0, 1], None, [0, 1]]",
]

ASSIGN = [
    ("f", "0", "9"), ("f", "0", "9.5"), ("f", "0", "True"), ("f", "-1", "f[0]"),
    ("f", "0", "torch.tensor([7.0, 8.0, 9.0])"), ("f", "0", "torch.tensor([7.0, 8.0])"),
    ("f", "0", "torch.tensor([[[7.0, 8.0, 9.0]]])"), ("f", "0", "torch.tensor([1, 2, 3])"),
    ("f", ":, 1", "0"), ("f", ":, 1", "torch.tensor([5.0, 6.0])"), ("f", "..., 0", "-1"),
    ("f", "...", "0"), ("f", "None", "3"), ("f", "True", "3"), ("f", "False", "3"),
    ("f", "::2", "7"), ("f", ":, ::2", "torch.tensor([1.0, 2.0])"), ("f", "1:", "f[:1]"),
    ("f", "f > 2", "0"), ("f", "f > 2", "torch.tensor([10.0, 20.0, 30.0, 40.0])"),
    ("f", "f > 2", "torch.tensor([10.0, 20.0])"), ("f", "[0, 1], [2, 0]", "5"),
    ("f", "[0, 1], [2, 0]", "torch.tensor([5.0, 6.0])"), ("f", "[1, 1]", "torch.tensor([1.0, 2.0, 3.0])"),
    ("f", ":, [0, 2]", "torch.tensor([[1.0], [2.0]])"), ("f", "b", "4"), ("f", "0", "'a'"),
    ("f", "0", "None"), ("f", "5", "1"), ("f", "0, 0, 0", "1"), ("f", "1.5", "1"),
    ("f", "[0, 1]", "torch.ones(2, 1, 1, 3)"), ("f", "0", "torch.ones(1, 1, 3)"),
    ("f", "torch.tensor(1)", "0"), ("f", "torch.tensor([1])", "0"), ("f", "[0, 1], [2, 0]", "torch.tensor([5, 6])"),
    ("i", "0", "2**70"), ("i", "0", "2.7"), ("i", "b", "0"), ("i", "[0, 2]", "torch.tensor([8, 9])"),
    ("u8", "0", "300"), ("u8", "0", "-1"), ("u8", "0", "1.5"), ("b", "0", "0"), ("b", "1", "2.5"),
    ("z", "...", "4"), ("z", "None", "4"), ("z", "0", "4"), ("z", "()", "torch.tensor(7.0)"),
    ("x", "0, 1", "torch.arange(4)"), ("x", "..., 1", "torch.tensor([100, 200, 300])"),
    ("x", "m", "torch.tensor(0)"), ("x", "x > 20", "-1"), ("x", ":, [0, 2], 1:", "7"),
    ("e", "0", "1"), ("e", "e > 0", "1"),
    ("x", ":, :, 1", "A.t.default(torch.tensor([[1, 2], [3, 4], [5, 6]]))"),
    ("x", "..., [0, 3]", "torch.tensor([[10], [20], [30]])"), ("x", "[0, 1], None, [0, 1]", "-5"),
    ("x", "[[0, 1], [1, 0]], 0", "torch.tensor([[100, 101, 102, 103]])"),
    ("x", "0", "A.expand.default(torch.tensor([7, 8, 9, 10]), [3, 4])"), ("x", "x", "1"),
    ("x", "[0, 0], [1, 1]", "torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])"),
    ("f", "[0, 0], [1, 1]", "torch.tensor([1.0, 2.0])"),
]


def assign_case(target, index, value):
    """The program of one assignment case: the target and its version change afterwards."""
    return f"_v = {target}._version\n{target}[{index}] = {value}\nresult = ({target}, {target}._version - _v)"


CASES = [(c, ("x", "f", "m")) for c in READ] + [
    (assign_case(t, i, v), ()) for t, i, v in ASSIGN
]
