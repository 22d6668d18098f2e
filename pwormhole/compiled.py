"""Which packet engine runs: the compiled hot path or the pure-Python model.

The modules in ``COMPILED_MODULES`` are compiled by Cython from their own ``.py``
source (types in the ``.pxd`` beside each) when the package is installed; the
``.py`` files stay the model and the fallback. The build writes ``MANIFEST``
(each module's ``.py`` + ``.pxd`` digest, taken before compiling) once all of them
compiled. The compiled modules are used only as a whole and only while every
digest matches the sources; otherwise, or with ``PWORMHOLE_PURE=1``, the ``.py`` sources are imported
instead (:func:`install`, run by ``pwormhole/__init__.py`` before any of them
is imported), and :func:`engine` says why.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
from pathlib import Path

COMPILED_MODULES = (
    "pwormhole.engine.events", "pwormhole.engine.lp", "pwormhole.net.packet", "pwormhole.net.device",
    "pwormhole.net.switch", "pwormhole.net.host", "pwormhole.net.cc", "pwormhole.net.freeze", "pwormhole.net.dispatch",
    "pwormhole.sync.codec", "pwormhole.accel.fluid", "pwormhole.net.dagrun", "pwormhole.accel.steady",
    "pwormhole.accel.sampling", "pwormhole.accel.groups", "pwormhole.accel.wormhole", "pwormhole.accel.replay",
    "pwormhole.accel.ringstep", "pwormhole.accel.fastforward", "pwormhole.accel.successor", "pwormhole.accel.memo",
    "pwormhole.accel.follow", "pwormhole.accel.solvers", "pwormhole.net.snapshot", "pwormhole.accel.parts",
)
MANIFEST = "_compiled.json"  # beside this file: module name -> sha256 of the .py and .pxd it was compiled from
PACKAGE_DIR = Path(__file__).resolve().parent
REBUILD_HINT = "pip install -e '.[all]' (needs gcc and the Python headers)"


def source_path(module: str) -> Path:
    """The ``.py`` source of a module of this package."""
    return PACKAGE_DIR.joinpath(*module.split(".")[1:]).with_suffix(".py")


def source_digest(py: Path) -> str:
    """sha256 of a module's ``.py`` source and the ``.pxd`` beside it (what its build is made of)."""
    return hashlib.sha256(py.read_bytes() + b"\0" + py.with_suffix(".pxd").read_bytes()).hexdigest()


def source_digests() -> dict[str, str]:
    """module name -> :func:`source_digest` of its sources now."""
    return {m: source_digest(source_path(m)) for m in COMPILED_MODULES}


def _has_extension(module: str) -> bool:
    base = source_path(module).with_suffix("")
    return any(base.with_name(base.name + s).exists() for s in importlib.machinery.EXTENSION_SUFFIXES)


def _why_pure() -> str | None:
    """Why the pure-Python modules must run (None: the compiled ones are complete and current)."""
    if os.environ.get("PWORMHOLE_PURE", "") not in ("", "0"):
        return "PWORMHOLE_PURE is set"
    try:
        built = json.loads((PACKAGE_DIR / MANIFEST).read_text())
    except (OSError, ValueError):
        return "the compiled engine is not built"
    if not all(_has_extension(m) for m in COMPILED_MODULES):
        return "the compiled engine is not built"
    try:
        now = source_digests()
    except OSError:
        return "the compiled engine's sources are missing"
    if built != now:
        return "the compiled engine is older than its source"
    return None


class _PureFinder:
    """Imports the ``.py`` source of the compiled modules, never their extension (a meta path finder:
    any object with ``find_spec``; importlib.abc's base class would load importlib.resources)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in COMPILED_MODULES:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname))


_WHY_PURE: str | None = None


def install(meta_path: list) -> None:
    """Decide once, before the engine modules are imported: put the pure-source finder
    first on ``meta_path`` when the compiled modules must not run."""
    global _WHY_PURE
    _WHY_PURE = _why_pure()
    if _WHY_PURE is not None:
        meta_path.insert(0, _PureFinder())


def engine() -> str:
    """``"compiled"``, or ``"pure"`` with the reason: what a run's summary reports."""
    return "compiled" if _WHY_PURE is None else f"pure ({_WHY_PURE})"


def warning() -> str | None:
    """One line for a run's start when the pure engine runs without being asked for, else None."""
    if _WHY_PURE is None or _WHY_PURE.startswith("PWORMHOLE_PURE"):
        return None
    return f"warning: {_WHY_PURE}; running the pure-Python packet engine (several times slower); fix: {REBUILD_HINT}"
