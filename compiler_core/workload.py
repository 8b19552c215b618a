"""Workloads: (op, params) validated against the op's signature, with a stable canonical key."""
from __future__ import annotations

import re
from dataclasses import dataclass

from compiler_core.errors import WorkloadError

MAX_DIM = 1 << 20
MAX_TENSOR_ELEMS = 1 << 28  # 1 GiB of float32 per tensor
# An integer written as text is written as JSON writes one: ASCII digits (str.isdigit() also accepts '²', which int()
# refuses, and '٣', which int() reads as 3), no '+', space or leading zero. The one spelling of an integer in text:
# workload keys, the CLI's --params and the REST query string (tuner_server.api.query_rules) all read it.
UNSIGNED_TEXT = "(?:0|[1-9][0-9]*)"
INT_TEXT = re.compile(f"(?=-?[0-9]{{1,18}}\\Z)-?{UNSIGNED_TEXT}")  # at most 18 digits: a 64-bit int


@dataclass(frozen=True)
class Param:
    """One parameter of an op's signature: an int in [lo, hi] or a string (optionally from `choices`)."""
    name: str
    kind: str = "int"  # "int" | "str"
    lo: int = 1
    hi: int = MAX_DIM
    choices: tuple = ()
    default: object = None
    doc: str = ""

    def coerce(self, op: str, value: object) -> object:
        if self.kind == "int":
            if isinstance(value, str) and INT_TEXT.fullmatch(value):
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise WorkloadError(f"{op}: param {self.name} must be an integer in [{self.lo}, {self.hi}], "
                                    f"got {value!r}")
            if not self.lo <= value <= self.hi:
                raise WorkloadError(f"{op}: param {self.name}={value} out of range [{self.lo}, {self.hi}]")
            return value
        if not isinstance(value, str):
            allowed = f" (one of {', '.join(self.choices)})" if self.choices else ""
            raise WorkloadError(f"{op}: param {self.name} must be a string{allowed}, got {value!r}")
        if self.choices and value not in self.choices:
            allowed = ", ".join(self.choices)
            raise WorkloadError(f"{op}: unsupported {self.name} {value!r}; allowed: {allowed}")
        return value

    def describe(self) -> dict:
        d = {"name": self.name, "kind": self.kind, "doc": self.doc}
        if self.kind == "int":
            d.update(min=self.lo, max=self.hi)
        if self.choices:
            d["choices"] = list(self.choices)
        if self.default is not None:
            d["default"] = self.default
        return d


@dataclass(frozen=True)
class Workload:
    """An op with concrete params; build with `make_workload`, which validates."""
    op: str
    params: tuple  # ((name, value), ...) in signature order

    def __getitem__(self, name: str):
        for k, v in self.params:
            if k == name:
                return v
        raise KeyError(name)

    def get(self, name: str, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    @property
    def param_dict(self) -> dict:
        return dict(self.params)

    @property
    def dtype(self) -> str:
        return self["dtype"]

    @property
    def key(self) -> str:
        return f"{self.op}({','.join(f'{k}={v}' for k, v in self.params)})"

    def __str__(self) -> str:
        return self.key


def make_workload(op: str, params: dict | None = None, **kwargs) -> Workload:
    """Validate (op, params) against the op registry; raises WorkloadError naming what is wrong."""
    from compiler_core.ops import get_op

    opdef = get_op(op)
    names = [p.name for p in opdef.params]
    if params is not None and not isinstance(params, dict):
        raise WorkloadError(f"{op}: params must be a dict of {', '.join(names)}, got {type(params).__name__}")
    given = dict(params or {}, **kwargs)
    extra = sorted(map(str, set(given) - set(names)))
    if extra:
        raise WorkloadError(f"{op}: unknown param(s) {', '.join(extra)}; expected {', '.join(names)}")
    values = []
    for p in opdef.params:
        if p.name not in given:
            if p.default is None:
                raise WorkloadError(f"{op}: missing param {p.name}; expected {', '.join(names)}")
            given[p.name] = p.default
        values.append((p.name, p.coerce(op, given[p.name])))
    workload = Workload(op, tuple(values))
    workload = opdef.normalize(workload) if opdef.normalize else workload
    for t in opdef.tensor_specs(workload):
        elems = 1
        for s in t.shape:
            elems *= s
        if elems > MAX_TENSOR_ELEMS:
            raise WorkloadError(f"{op}: tensor {t.name} would have {elems} elements > {MAX_TENSOR_ELEMS}")
    return workload


def parse_key(key: str) -> Workload:
    """Inverse of Workload.key: 'matmul(M=64,N=64,K=64,dtype=float32)' -> Workload."""
    if "(" not in key or not key.endswith(")"):
        raise WorkloadError(f"malformed workload key {key!r}: expected op(name=value,...)")
    op, _, rest = key.partition("(")
    return make_workload(op, parse_params(rest[:-1]))


def parse_params(text: str, source: str = "params") -> dict:
    """'M=64,N=64,expr=max(a,b),vectors=b,w' -> dict; ints (INT_TEXT) become int, the rest stay strings ('+64' and
    '064' too, which an int param then refuses); a part not name=value, or a name given twice, is a WorkloadError
    naming `source` (where the text came from: a CLI flag, say) and the text."""
    params: dict = {}
    for part in _merge_list_values(_split_top_level(text)):
        name, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not name:
            raise WorkloadError(f"{source} {text!r}: {part.strip()!r} is not name=value")
        if name in params:
            raise WorkloadError(f"{source} {text!r}: param {name!r} given more than once; give each at most once")
        params[name] = int(value) if INT_TEXT.fullmatch(value) else value
    return params


def _split_top_level(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur.append(ch)
    if cur:
        parts.append("".join(cur))
    return parts


def _merge_list_values(parts: list[str]) -> list[str]:
    """'vectors=b', 'w' -> 'vectors=b,w': list-valued params keep their commas in the key."""
    merged: list[str] = []
    for part in parts:
        if "=" not in part and merged:
            merged[-1] += "," + part
        else:
            merged.append(part)
    return merged
