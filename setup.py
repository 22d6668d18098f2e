"""Build of pwormhole's compiled hot path; the package's metadata is in pyproject.toml.

Cython compiles the modules of ``pwormhole.compiled.COMPILED_MODULES`` from their
own ``.py`` source, with the C types of the ``.pxd`` beside each. If anything in
that fails, the install goes on without them (pure Python: ``pwormhole run`` then
says so) and no manifest is written, so that a partial build is never used.
"""

import hashlib
import json
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
MODULES = ("pwormhole.events", "pwormhole.net.nodes", "pwormhole.net.cc", "pwormhole.lp.engine")  # = compiled.COMPILED_MODULES
MANIFEST = "_compiled.json"  # = compiled.MANIFEST
DIRECTIVES = {"language_level": 3, "annotation_typing": False}


def warn(msg: str) -> None:
    print(f"pwormhole: {msg}; installing the pure-Python engine only", file=sys.stderr)


def extensions() -> list:
    try:
        from Cython.Build import cythonize  # a build requirement (pyproject.toml); optional at run time
    except ImportError:
        warn("Cython is not available")
        return []
    sources = [str(Path(*m.split(".")).with_suffix(".py")) for m in MODULES]
    try:
        return cythonize(sources, compiler_directives=DIRECTIVES, quiet=True)
    except Exception as exc:  # a Cython error in the sources: build nothing
        warn(f"Cython failed ({exc})")
        return []


class OptionalBuildExt(build_ext):
    """Builds every extension or none, and writes the manifest only when all built."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers, a C error
            warn(f"compiling failed ({exc})")
            for ext in self.extensions:
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            return
        if not self.extensions:
            return
        digests = {m: hashlib.sha256((ROOT / Path(*m.split(".")).with_suffix(".py")).read_bytes()).hexdigest()
                   for m in MODULES}
        first = self.extensions[0].name  # pwormhole.x.y -> the folder of the package pwormhole
        package_dir = Path(self.get_ext_fullpath(first)).parents[first.count(".") - 1]
        (package_dir / MANIFEST).write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
