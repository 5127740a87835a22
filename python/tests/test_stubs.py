"""The generated type stubs (``switchyard/_C.pyi``) parse, and declare the operators in PyTorch's
gen_pyi shape: one ``def`` per Python signature, ``@overload`` when there are several."""

import ast
import pathlib
import types

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


# Attributes every class has or that carry no API of their own.
_NOT_API = {"__dict__", "__doc__", "__module__", "__weakref__", "__init__", "__getattr__"}


def _class_names(cls_node):
    """Names a stub class declares: methods, properties and annotated attributes."""
    names = set()
    for node in cls_node.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _module_names(body):
    """Top-level names a module or stub binds (defs, classes, assignments, imports),
    descending into ``if`` blocks such as ``if TYPE_CHECKING:``."""
    names, star_from = set(), []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.name == "*":
                    star_from.append(node.module)
                else:
                    names.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.If):
            inner, stars = _module_names(node.body)
            names |= inner
            star_from += stars
    return names, star_from


def test_every_tensor_attribute_has_a_stub():
    import switchyard

    tensor = next(n for n in _tree().body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    declared = _class_names(tensor)
    T = switchyard.Tensor
    runtime = {n for n in dir(T) if n not in dir(object) or n in T.__dict__} - _NOT_API
    assert sorted(runtime - declared) == []
    # No catch-all hides a missing one.
    assert "__getattr__" not in declared


def test_every_module_attribute_has_a_stub():
    import switchyard

    stub_names, _ = _module_names(_tree().body)
    c_public = {n for n in dir(switchyard._C) if not n.startswith("_")}
    assert sorted(c_public - stub_names) == []
    init = pathlib.Path(switchyard.__file__)
    init_names, stars = _module_names(ast.parse(init.read_text()).body)
    # `from ._C import *` under TYPE_CHECKING brings the stub's names.
    assert "_C" in stars
    # Submodules (`library`, `nn`, ...) are typed by their own sources.
    public = {
        n
        for n in dir(switchyard)
        if not n.startswith("_")
        and not (
            isinstance(getattr(switchyard, n), types.ModuleType)
            and getattr(switchyard, n).__name__.startswith("switchyard.")
        )
    }
    assert sorted(public - init_names - stub_names) == []
    # What the package imports from `_C` by name is declared there.
    imported = {
        a.name
        for node in ast.walk(ast.parse(init.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == "_C" and node.level == 1
        for a in node.names
        if a.name != "*"
    }
    assert sorted(imported - stub_names) == []


def test_stub_defines_each_tensor_member_once_unless_overloaded():
    tensor = next(n for n in _tree().body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    for name, nodes in _defs(tensor.body).items():
        if len(nodes) > 1:
            assert all(
                any(ast.unparse(d) == "overload" for d in n.decorator_list) for n in nodes
            ), name
