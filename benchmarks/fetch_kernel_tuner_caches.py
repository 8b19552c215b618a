"""Fetch exhaustively measured Kernel Tuner caches that PyPI packages ship, as replay tables for search_efficiency.py.

Kernel Tuner's own sdist (kernel_tuner 1.5.0) ships only toy caches (10-15 configs). The sdist of
autotuning-methodology (MIT licence, (c) 2023 Floris-Jan Willemsen; the package behind "A Methodology for Comparing
Auto-Tuning Optimization Algorithms") ships one real exhaustive cache in its tests: a 2D convolution kernel on an
NVIDIA GeForce RTX 2080 Ti, 6,768 configs of 8 tune parameters (5,256 ran; the rest failed to compile or run). This
script downloads that sdist with pip (pinned version and sha256), reads the cache through tuner_server.replay, and
writes it as one of our tables with its origin and licence in the table's meta. The converted table is committed as
benchmarks/data/kt-convolution-rtx2080ti.json.gz (see benchmarks/data/THIRD_PARTY.md); rerun this to check it.

    python benchmarks/fetch_kernel_tuner_caches.py [--out benchmarks/data]
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tuner_server.replay import load_kernel_tuner_cache, save_table  # noqa: E402

PACKAGE, VERSION = "autotuning-methodology", "1.1.0"
SDIST_SHA256 = "e3fffd803d6f323942fed6cb3b5744fea51b5e6f1490ec82031cfee7dee08e52"
CACHES = {  # member of the sdist -> our table's name
    "autotuning_methodology-1.1.0/tests/autotuning_methodology/integration/mockfiles/mock_gpu.json":
        "kt-convolution-rtx2080ti",
}
ORIGIN = {"package": f"{PACKAGE}=={VERSION} (PyPI sdist)", "license": "MIT",
          "copyright": "Copyright (c) 2023 Floris-Jan Willemsen"}


def download(into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(into),
                    f"{PACKAGE}=={VERSION}"], check=True, stdout=subprocess.DEVNULL)
    sdist = next(into.glob("autotuning_methodology-*.tar.gz"))
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise SystemExit(f"{sdist.name}: sha256 {digest}, expected {SDIST_SHA256}")
    return sdist


def convert(sdist: Path, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tarfile.open(sdist) as tar:
        for member, name in CACHES.items():
            cache = out / f"{name}.kt.json"
            cache.write_bytes(tar.extractfile(member).read())
            try:
                table = load_kernel_tuner_cache(cache)
            finally:
                cache.unlink()
            meta = {**table.meta, "name": name, "origin": {**ORIGIN, "file": member.split("/", 1)[1]}}
            trials = [{"config": o.config, "median_s": o.median_s, "status": o.status}
                      for o in table.results.values()]
            written.append(save_table(out / f"{name}.json.gz", meta, trials))
    return written


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(REPO / "benchmarks" / "data"))
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for path in convert(download(Path(tmp)), Path(args.out)):
            print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
