"""The generated type stubs (``switchyard/_C.pyi``) parse, and declare the operators in PyTorch's
gen_pyi shape: one ``def`` per Python signature, ``@overload`` when there are several."""

import ast
import pathlib

STUB = pathlib.Path(__file__).parent.parent / "switchyard" / "_C.pyi"


def _tree():
    return ast.parse(STUB.read_text(), filename=str(STUB))


def _defs(body):
    """name -> the FunctionDef nodes of that name in ``body``."""
    out = {}
    for node in body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, []).append(node)
    return out


def test_stub_parses_and_carries_the_generated_header():
    text = STUB.read_text()
    assert text.startswith("# @generated")
    _tree()


def test_module_functions():
    functions = _defs(_tree().body)
    # torch.add: one signature (the deprecated one aside); torch.max and torch.pow: three;
    # torch.randint: four, as PyTorch's parser lists them.
    assert len(functions["add"]) == 1
    assert len(functions["max"]) == 3
    assert len(functions["pow"]) == 3
    assert len(functions["randint"]) == 4
    for name in ("max", "pow", "randint"):
        for node in functions[name]:
            assert [ast.unparse(d) for d in node.decorator_list] == ["overload"]
    add = functions["add"][0]
    assert [a.arg for a in add.args.args] == ["input", "other"]
    assert [a.arg for a in add.args.kwonlyargs] == ["alpha", "out"]
    assert ast.unparse(add.returns) == "Tensor"
    randint = functions["randint"][1]
    assert [a.arg for a in randint.args.kwonlyargs] == [
        "out", "dtype", "layout", "device", "pin_memory", "requires_grad",
    ]


def test_tensor_methods_take_self_first():
    tensor = next(n for n in _tree().body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = _defs(tensor.body)
    for name in ("add", "add_", "sum", "max", "mul_"):
        assert name in methods, name
        for node in methods[name]:
            assert node.args.args[0].arg == "self"
    # Tensor.max: (), (Tensor other), (int dim, bool keepdim=False).
    assert [len(n.args.args) for n in methods["max"]] == [1, 2, 3]
