"""Build CUDA for Hopper's architecture-specific target (sm_90a) and read back what ptxas and the SASS say.

`nvcc_check.nvcc_compile` passes `-arch=<arch>`; wgmma and setmaxnreg need sm_90a, and with some nvcc releases the
`-arch=sm_90a` shorthand also runs a plain sm_90 pass that rejects them, so this builds with the explicit
`-gencode=arch=compute_90a,code=sm_90a`. `-Xptxas -v` reports registers, stack frame and spills per kernel, and the
performance warnings that matter here (wgmma serialised, setmaxnreg ignored); the SASS, where a disassembler is
installed, shows whether the tensor-core path is the Hopper one (HGMMA) or not.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from compiler_core.errors import BuildError

GENCODE = "-gencode=arch=compute_90a,code=sm_90a"
FLAGS = ("-O3", "-std=c++17", "-Xptxas", "-v")


@dataclass(frozen=True)
class KernelResources:
    """One kernel's line of `ptxas -v`."""
    registers: int
    stack_frame: int
    spill_stores: int
    spill_loads: int

    @property
    def spills(self) -> bool:
        return bool(self.stack_frame or self.spill_stores or self.spill_loads)


@dataclass(frozen=True)
class Sm90Build:
    cubin: bytes
    log: str  # ptxas' report (stderr)
    kernels: dict  # kernel name -> KernelResources
    warnings: tuple  # ptxas/nvcc warning lines


def compile_sm90a(source: str, extra_flags: tuple = (), timeout_s: float = 300.0) -> Sm90Build:
    """The cubin of `source` for sm_90a plus ptxas' resource report; BuildError with nvcc's output on failure."""
    if shutil.which("nvcc") is None:
        raise BuildError("nvcc not found on PATH")
    with tempfile.TemporaryDirectory(prefix="tf-sm90-") as tmp:
        src, out = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
        src.write_text(source)
        cmd = ["nvcc", "-cubin", GENCODE, *FLAGS, *extra_flags, "-o", str(out), str(src)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise BuildError(f"nvcc (sm_90a) timed out after {timeout_s:.0f} s") from None
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise BuildError(f"nvcc {GENCODE} failed:\n{log[-6000:]}")
        cubin = out.read_bytes()
    warnings = tuple(line.strip() for line in log.splitlines() if "warning" in line.lower())
    return Sm90Build(cubin, log, parse_ptxas(log), warnings)


_FUNCTION = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_ENTRY = re.compile(r"Compiling entry function '(\S+)'")


def parse_ptxas(log: str) -> dict:
    """kernel name -> KernelResources from `ptxas -v` output (entry functions only)."""
    entries = set(_ENTRY.findall(log))
    found: dict = {}
    name, frame = None, (0, 0, 0)
    for line in log.splitlines():
        if m := _FUNCTION.search(line):
            name, frame = m.group(1), (0, 0, 0)
        elif (m := _FRAME.search(line)) and name:
            frame = tuple(int(g) for g in m.groups())
        elif (m := _USED.search(line)) and name:
            if not entries or name in entries:
                found[name] = KernelResources(int(m.group(1)), *frame)
            name = None
    return found


# ---- SASS ------------------------------------------------------------------------------------------------------
def find_disassembler() -> list | None:
    """The command that prints a cubin's SASS: cuobjdump -sass or nvdisasm, on PATH, beside nvcc, or from the
    nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm wheels; None when there is none."""
    nvcc = shutil.which("nvcc")
    dirs = [os.path.dirname(os.path.realpath(nvcc))] if nvcc else []
    dirs += ["/usr/local/cuda/bin"]
    for site in sys.path:
        dirs += glob.glob(os.path.join(site, "nvidia", "*", "bin"))
    for tool, args in (("cuobjdump", ["-sass"]), ("nvdisasm", [])):
        path = shutil.which(tool) or next((os.path.join(d, tool) for d in dirs
                                           if os.access(os.path.join(d, tool), os.X_OK)), None)
        if path:
            return [path, *args]
    return None


def sass(cubin: bytes, disassembler: list | None = None) -> str | None:
    """The SASS text of a cubin, or None without a disassembler (or when it fails)."""
    cmd = disassembler or find_disassembler()
    if cmd is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        # cuobjdump runs nvdisasm from its PATH: the wheels install both in one bin folder
        env = {**os.environ, "PATH": os.pathsep.join((os.path.dirname(cmd[0]), os.environ.get("PATH", "")))}
        try:
            proc = subprocess.run([*cmd, f.name], capture_output=True, text=True, timeout=120, env=env)
        except (OSError, subprocess.TimeoutExpired):
            return None
    return proc.stdout if proc.returncode == 0 else None


def count_opcode(sass_text: str, opcode: str) -> int:
    """Instructions whose mnemonic starts with `opcode` (HGMMA, HMMA, LDL, STL, ...)."""
    return len(re.findall(rf"\b{re.escape(opcode)}[.\s]", sass_text))
