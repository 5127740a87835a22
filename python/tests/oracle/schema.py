"""Python-side reading of ``str(overload._schema)``: the arguments (name, type, default,
keyword-only, written) and returns of an overload, and the list of overloads of ``ops.yaml``
(from ``crates/python/src/generated/overloads.rs``) with their tags."""

import pathlib
import re
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[3]
OVERLOADS_RS = ROOT / "crates" / "python" / "src" / "generated" / "overloads.rs"
OPS_YAML = ROOT / "crates" / "ops" / "ops.yaml"


@dataclass(frozen=True)
class Argument:
    name: str
    type: str  # without alias annotation: "Tensor", "int[1]?", "Tensor?[]"
    default: object  # the default's text, or NO_DEFAULT
    kwarg_only: bool
    written: bool  # Tensor(a!)
    alias: str | None  # "a", "a!", "a -> *"

    @property
    def has_default(self):
        return self.default is not NO_DEFAULT

    @property
    def base(self):
        """The type without ``?`` and list sizes: ``Tensor``, ``int``, ``SymInt``..."""
        return re.sub(r"[\[\]0-9?]", "", self.type)

    @property
    def optional(self):
        return self.type.endswith("?")

    @property
    def is_list(self):
        return "[" in self.type


NO_DEFAULT = object()


def _split_top(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_schema(text):
    """``(name, overload, [Argument], [return type strings])`` of a printed schema."""
    head, _, rets = text.rpartition(" -> ")
    qual, _, args = head.partition("(")
    args = args[:-1]
    name, _, overload = qual.partition(".")
    arguments, kwarg_only = [], False
    for part in _split_top(args):
        if part == "*":
            kwarg_only = True
            continue
        decl, eq, default = part.partition("=")
        ty, _, arg_name = decl.strip().rpartition(" ")
        alias = None
        m = re.match(r"^(\w+)\(([^)]*)\)(.*)$", ty)
        if m:
            alias = m.group(2)
            ty = m.group(1) + m.group(3)
        arguments.append(
            Argument(
                name=arg_name,
                type=ty,
                default=default if eq else NO_DEFAULT,
                kwarg_only=kwarg_only,
                written=bool(alias and "!" in alias),
                alias=alias,
            )
        )
    rets = rets.strip()
    if rets.startswith("(") and rets.endswith(")"):
        returns = _split_top(rets[1:-1])
    else:
        returns = [rets] if rets else []
    return name.split("::")[-1], overload, arguments, returns


def yaml_overloads():
    """``[(name, overload)]`` of every ops.yaml overload, in ops.yaml's order per name
    (``overload`` is ``"default"`` for the unnamed one)."""
    src = OVERLOADS_RS.read_text()
    out = []
    for name, ovs in re.findall(r'\("aten::([^"]+)", &\[([^\]]*)\]\)', src):
        for o in re.findall(r'"([^"]*)"', ovs):
            out.append((name, o or "default"))
    return out


def yaml_tags():
    """``{(name, overload): set(tags)}`` from ops.yaml's ``tags:`` entries."""
    tags, key = {}, None
    for line in OPS_YAML.read_text().splitlines():
        m = re.match(r"^- func: ([\w]+)(?:\.(\w+))?\(", line)
        if m:
            key = (m.group(1), m.group(2) or "default")
            tags[key] = set()
            continue
        m = re.match(r"^\s+tags:\s*\[?([^\]]*)\]?\s*$", line)
        if m and key:
            tags[key] |= {t.strip() for t in m.group(1).split(",") if t.strip()}
    return tags
