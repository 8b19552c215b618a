"""Regenerates tunefarm_proto/ from proto/tunefarm.proto (run after editing the contract; a test checks staleness)."""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto" / "tunefarm.proto"
PACKAGE = "tunefarm_proto"


def generate(out_root: Path) -> list[Path]:
    """Writes tunefarm_proto/tunefarm_pb2*.py under out_root; the package path makes the imports absolute."""
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / PACKAGE
        staged.mkdir()
        shutil.copy(PROTO, staged / "tunefarm.proto")
        (out_root / PACKAGE).mkdir(parents=True, exist_ok=True)
        code = protoc.main(["protoc", f"-I{tmp}", f"--python_out={out_root}", f"--pyi_out={out_root}",
                            f"--grpc_python_out={out_root}", str(staged / "tunefarm.proto")])
        if code != 0:
            raise RuntimeError(f"protoc failed with exit code {code}")
    return sorted((out_root / PACKAGE).glob("tunefarm_pb2*"))


if __name__ == "__main__":
    for path in generate(ROOT):
        print(path.relative_to(ROOT))
    sys.exit(0)
