"""Build of pwormhole's compiled hot path; the package's metadata is in pyproject.toml.

Cython compiles the modules of ``pwormhole.compiled.COMPILED_MODULES`` from their
own ``.py`` source, with the C types of the ``.pxd`` beside each. If anything in
that fails, the install goes on without them (pure Python: ``pwormhole run`` then
says so) and no manifest is written, so that a partial build is never used.
"""

import importlib.util
import json
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# pwormhole/compiled.py names the modules and the manifest (loaded by path: the package is not installed yet)
_spec = importlib.util.spec_from_file_location("_pwormhole_compiled", ROOT / "pwormhole" / "compiled.py")
compiled = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compiled)
MODULES = compiled.COMPILED_MODULES
MANIFEST = compiled.MANIFEST
DIRECTIVES = {"language_level": 3, "annotation_typing": False}


def warn(msg: str) -> None:
    print(f"pwormhole: {msg}; installing the pure-Python engine only", file=sys.stderr)


# taken before compiling: the manifest names the sources the extensions are made of
DIGESTS = {m: compiled.source_digest(ROOT / Path(*m.split(".")).with_suffix(".py")) for m in MODULES}


class OptionalBuildExt(build_ext):
    """Cythonizes and builds every extension or none, and writes the manifest only when all built."""

    def run(self) -> None:
        try:
            from Cython.Build import cythonize  # a build requirement (pyproject.toml); optional at run time
        except ImportError:
            warn("Cython is not available")
            return
        try:  # force: the C files are made from these sources, whatever the files' times say
            made = cythonize([e.sources[0] for e in self.extensions], compiler_directives=DIRECTIVES, quiet=True,
                             force=True)
            c_sources = {e.name: e.sources for e in made}
            for ext in self.extensions:
                ext.sources = c_sources[ext.name]
            super().run()
        except Exception as exc:  # a Cython error, no compiler, no headers, a C error
            warn(f"compiling failed ({exc})")
            for ext in self.extensions:
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            return
        first = self.extensions[0].name  # pwormhole.x.y -> the folder of the package pwormhole
        package_dir = Path(self.get_ext_fullpath(first)).parents[first.count(".") - 1]
        (package_dir / MANIFEST).write_text(json.dumps(DIGESTS, indent=1, sort_keys=True) + "\n")


# no fused multiply-add: C double arithmetic must round as Python floats do (one rounding per operation)
COMPILE_ARGS = ["-ffp-contract=off"]
EXTENSIONS = [Extension(m, [str(Path(*m.split(".")).with_suffix(".py"))], extra_compile_args=COMPILE_ARGS)
              for m in MODULES]
setup(ext_modules=EXTENSIONS, cmdclass={"build_ext": OptionalBuildExt})
