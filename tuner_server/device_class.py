"""Device class: the key best schedules are stored under, derived from an agent's fingerprint.

`cuda-<model slug>-sm<NN>` (e.g. `cuda-nvidia-h100-80gb-hbm3-sm90`) or `cpu-<arch>-<best isa>-<N>c`
(e.g. `cpu-x86_64-avx2-2c`). Model slugs are lowercase `[a-z0-9-]`; the arch and ISA tokens keep their
conventional underscores (`x86_64`, `sse4_2`). The function is pure and deterministic.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

# the tokens of compiler_core CPU_ISAS, widest first
CPU_ISA_PRIORITY = ("amx_bf16", "avx512_bf16", "avx512f", "avx2", "sse4_2", "neon")
_ISA_ALIASES = {"sse4.2": "sse4_2", "asimd": "neon"}
_ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "x86-64": "x86_64", "arm64": "aarch64"}
_MAX_SLUG = 64
_MAX_CLASS = 124
CLASS_PATTERN = r"(cpu|cuda)-[a-z0-9_-]{1,120}"  # what every derived class matches (regex, no anchors)


def slugify(text: str) -> str:
    """Lowercase, runs of anything outside [a-z0-9] become one '-', no leading/trailing '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:_MAX_SLUG].strip("-")


def device_class(fingerprint: Mapping) -> str:
    """Fingerprint dict (kind, model, arch, isa_flags, compute_units, ...) -> class string; ValueError if unusable."""
    kind = _required(fingerprint, "kind")
    if kind == "cuda":
        name = f"cuda-{_model_slug(fingerprint)}-sm{sm_number(_required(fingerprint, 'arch'))}"
    elif kind == "cpu":
        arch = arch_token(_required(fingerprint, "arch"))
        name = f"cpu-{arch}-{best_isa(_isa_flags(fingerprint))}-{_compute_units(fingerprint)}c"
    else:
        raise ValueError(f"device fingerprint: kind must be 'cpu' or 'cuda', got {kind!r}")
    if not re.fullmatch(CLASS_PATTERN, name):  # a class that queries and imports can name: only a long arch breaks it
        raise ValueError(f"device fingerprint: its class {name[:60]}... would be {len(name)} characters, over the "
                         f"{_MAX_CLASS} a class has (shorten device.arch)")
    return name


def device_kind(device_class_name: str) -> str:
    """'cuda-nvidia-h100-sm90' -> 'cuda'."""
    return device_class_name.split("-", 1)[0]


def best_isa(flags) -> str:
    """The best ISA level among CPU_ISA_PRIORITY present in flags; 'base' when none is."""
    normal = {_ISA_ALIASES.get(f.lower(), f.lower().replace(".", "_")) for f in flags}
    return next((isa for isa in CPU_ISA_PRIORITY if isa in normal), "base")


def _required(fp: Mapping, name: str):
    value = fp.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError(f"device fingerprint: missing field {name!r}")
    return value.strip().lower() if isinstance(value, str) else value


def _model_slug(fp: Mapping) -> str:
    slug = slugify(str(_required(fp, "model")))
    if not slug:
        raise ValueError(f"device fingerprint: model {fp.get('model')!r} has no letters or digits")
    return slug


def sm_number(arch) -> str:
    """'sm_90', 'sm90', '90', '9.0', 'compute_90' -> '90'."""
    text = str(arch).strip().lower()
    match = re.fullmatch(r"(?:sm_?|compute_?)?(\d{2,3})[a-z]?", text) or re.fullmatch(r"(\d+)\.(\d)", text)
    if not match:
        raise ValueError(f"device fingerprint: cuda arch {arch!r} is not like 'sm_90' or '9.0'")
    return "".join(match.groups())


def arch_token(arch) -> str:
    """A CPU fingerprint's arch as its class spells it: 'amd64' -> 'x86_64'."""
    text = _ARCH_ALIASES.get(str(arch).lower(), str(arch).lower())
    token = re.sub(r"[^a-z0-9_]+", "-", text).strip("-")
    if not token:
        raise ValueError(f"device fingerprint: arch {arch!r} has no letters or digits")
    return token


def _isa_flags(fp: Mapping) -> list[str]:
    flags = fp.get("isa_flags")
    if flags is None:
        raise ValueError("device fingerprint: missing field 'isa_flags' (a list, possibly empty)")
    if isinstance(flags, str):
        flags = flags.replace(",", " ").split()
    if not all(isinstance(f, str) for f in flags):
        raise ValueError("device fingerprint: isa_flags must be strings")
    return list(flags)


def _compute_units(fp: Mapping) -> int:
    units = _required(fp, "compute_units")
    if isinstance(units, bool) or not isinstance(units, int) or units < 1:
        raise ValueError(f"device fingerprint: compute_units must be a positive integer, got {units!r}")
    return units
