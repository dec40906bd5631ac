"""Build cygrad's compiled kernels.

Every ``cygrad/_kernels/*.pyx`` becomes an extension; ``*.pyx.tp`` Tempita
templates are expanded to ``.pyx`` first.  Cython directives are set once,
here.  ``CYGRAD_DEBUG=1`` builds with bounds/wraparound checks and ``-O0 -g``.
``CYGRAD_ONLY=name1,name2`` restricts the build to some modules (development).
Kernels are compiled and linked with OpenMP (``-fopenmp``: large elementwise
kernels and sums split across threads, see ``cygrad/_kernels/threads.pyx``);
``CYGRAD_OPENMP=0`` builds without it, for a compiler that lacks OpenMP (the
kernels then run serially and the thread count is only recorded).

Rebuilds are incremental (``build_ext`` below): object files and finished
modules live in ``build/`` inside the tree, outside pip's throw-away build
environment, so a second ``pip install -e .`` with nothing changed copies
the cached modules instead of compiling, and editing one ``.pyx`` (or a
header it includes, directly or through another header) recompiles that
module only.  Wheels (``pip wheel .``, ``python -m build``) get modules
linked with ``-Wl,--strip-all``; in-tree builds keep their symbols for
profilers (``CYGRAD_STRIP=0``/``1`` overrides).  No module is built with
``-m`` flags: the C helpers that want AVX2 or AVX-512 carry per-function
target attributes (``cygrad/_kernels/cg_simd.h``), so one build runs on any
CPU of its architecture.

Cython's utility code (the memoryview type and its helpers, about 150 KB
of machine code per module) is compiled once, into the shared module
``cygrad._kernels._cyutility`` (Cython >= 3.1, ``--generate-shared``), which
every other module imports instead of carrying its own copy.
"""

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import Cython
import numpy as np
from Cython.Build import cythonize
from Cython.Tempita import Template
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext

DEBUG = os.environ.get("CYGRAD_DEBUG", "0") != "0"
DIRECTIVES = dict(
    language_level=3,
    boundscheck=DEBUG,
    wraparound=DEBUG,
    initializedcheck=DEBUG,
    nonecheck=False,
    cdivision=True,
    embedsignature=True,
)
OPENMP = os.environ.get("CYGRAD_OPENMP", "1") != "0"
HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join("cygrad", "_kernels")
# The compiled modules, one name per cygrad/_kernels/<name>.pyx.  A new
# kernel module is one more line here.
MODULES = [
    "act",
    "bmm",
    "conv",
    "cpu",
    "elementwise",
    "embed",
    "engine",
    "grid",
    "interp",
    "loss",
    "norm",
    "optim",
    "optim2",
    "optim_lbfgs",
    "optim_muon",
    "pool",
    "reduce",
    "reductions",
    "rng",
    "rnn",
    "scan",
    "select",
    "threads",
]
# Extra compiler flags of some modules.  The optimizer updates
# (cg_optim.h) must give the same bits in their AVX2 + FMA and AVX-512
# copies as in the portable one, so GCC may not contract a * b + c into an
# FMA there (the header refuses to compile without the macro).
NO_CONTRACT = ["-ffp-contract=off", "-DCG_OPTIM_NO_CONTRACT"]
MODULE_FLAGS = {
    "optim": NO_CONTRACT,
    "optim2": NO_CONTRACT,
    # torch's samplers: each multiply-add as torch's build rounds it
    "rng": ["-ffp-contract=off", "-fno-trapping-math"],
}


# Cython's shared utility module (see the docstring above).
SHARED = "_cyutility"


def load_optable():
    """The op table module, loaded from its file: importing it through the
    package would import cygrad, which needs the modules being built."""
    path = os.path.join(HERE, KERNELS, "optable.py")
    spec = importlib.util.spec_from_file_location("cygrad_optable", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


def expand_templates():
    """Write ``x.pyx`` from ``x.pyx.tp`` when the template or the op table is
    newer.  Templates see the table's rows as ``UNARY`` and ``BINARY``."""
    table, table_path = load_optable()
    # The scalar-exponent kernels (POWERS) follow the public unary rows.
    namespace = dict(UNARY=table.UNARY + table.POWERS,
                     BINARY=table.BINARY + table.POWERS_BINARY,
                     HELPERS=table.HELPERS, cost=table.cost)
    for tp in glob.glob(os.path.join(HERE, KERNELS, "*.tp")):
        out = tp[:-3]
        newest = max(os.path.getmtime(tp), os.path.getmtime(table_path))
        if os.path.exists(out) and os.path.getmtime(out) >= newest:
            continue
        with open(tp) as f:
            text = Template(f.read(), name=tp).substitute(namespace)
        with open(out, "w") as f:
            f.write(text)


def extensions():
    expand_templates()
    only = [s for s in os.environ.get("CYGRAD_ONLY", "").split(",") if s]
    if DEBUG:
        cflags = ["-O0", "-g"]
    else:
        cflags = ["-O3"]
    # -fno-math-errno: no kernel reads errno, and with it sqrt becomes one
    # vector instruction instead of a call that may set errno.
    cflags += ["-fno-math-errno", "-Wno-unused-function", "-Wno-unreachable-code"]
    ldflags = []
    if OPENMP:
        cflags.append("-fopenmp")
        ldflags.append("-fopenmp")
    names = {name: MODULE_FLAGS.get(name, []) for name in MODULES}
    exts = []
    for name, extra in sorted(names.items()):
        if only and name not in only:
            continue
        exts.append(
            Extension(
                f"cygrad._kernels.{name}",
                [os.path.join(KERNELS, name + ".pyx")],
                include_dirs=[np.get_include(), KERNELS],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=cflags + extra,
                extra_link_args=ldflags,
                libraries=["m"],
            )
        )
    # Generated C lives in build/, one folder per NumPy and Cython version:
    # the C of a module that cimports numpy depends on NumPy's .pxd, so one
    # C file cannot serve two environments.  A module is re-cythonized only
    # when one of cygrad's own sources it reads is newer than its C file
    # (Cython would also redo it whenever pip's fresh build environment
    # reinstalls NumPy, whose .pxd then looks new).
    ready, stale = [], []
    for ext in exts:
        pyx = ext.sources[0]
        c_file = os.path.join(CYTHON_DIR, os.path.splitext(pyx)[0] + ".c")
        deps = source_deps(pyx)
        if name_of(ext) == "elementwise":
            deps.add(os.path.join(KERNELS, "optable.py"))
        if not DEBUG and os.path.exists(c_file) and all(
            os.path.getmtime(d) <= os.path.getmtime(c_file) for d in deps
        ):
            ext.sources = [c_file]
            ready.append(ext)
        else:
            stale.append(ext)
    if stale:
        stale = cythonize(
            stale,
            compiler_directives=DIRECTIVES,
            include_path=[KERNELS],
            nthreads=int(os.environ.get("CYGRAD_BUILD_JOBS", "2")),
            build_dir=CYTHON_DIR,
            force=True,
            quiet=True,
            shared_utility_qualified_name=f"cygrad._kernels.{SHARED}",
        )
    exts = ready + stale
    sync_headers()
    if not only or SHARED in only or not built_shared():
        exts.append(shared_extension(cflags, ldflags))
    for ext in exts:
        ext.depends = sorted(header_deps(ext.sources))
    return exts


def sync_headers():
    """Refresh Cython's copies of the headers in the build folder.  Cython
    copies a header named in a ``cdef extern from`` next to the C file it
    writes, and refreshes it only when a module naming it is cythonized; a
    header included through another header (``cg_rows.h`` includes
    ``cg_math.h``) is then found stale beside the C file, before the
    source's, and the module links against the old header's functions."""
    build_kernels = os.path.join(CYTHON_DIR, KERNELS)
    for src in glob.glob(os.path.join(KERNELS, "*.h")):
        dst = os.path.join(build_kernels, os.path.basename(src))
        if os.path.exists(dst):
            with open(src, "rb") as a, open(dst, "rb") as b:
                if a.read() == b.read():
                    continue
            shutil.copy2(src, dst)


def shared_extension(cflags, ldflags):
    """The extension of Cython's shared utility module, its C written by
    Cython's ``--generate-shared`` once per Cython and NumPy version."""
    c_file = os.path.join(CYTHON_DIR, KERNELS, SHARED + ".c")
    if not os.path.exists(c_file):
        os.makedirs(os.path.dirname(c_file), exist_ok=True)
        subprocess.check_call([sys.executable, "-m", "cython",
                               f"--generate-shared={c_file}",
                               f"--module-name=cygrad._kernels.{SHARED}"])
    return Extension(f"cygrad._kernels.{SHARED}", [c_file],
                     extra_compile_args=cflags, extra_link_args=ldflags)


def built_shared():
    """Whether an in-place build already holds the shared module (a
    ``CYGRAD_ONLY`` build of some modules then leaves it alone)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    return os.path.exists(os.path.join(HERE, KERNELS, SHARED + suffix))


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PYX_INCLUDE = re.compile(r'^\s*include\s+"([^"]+)"', re.M)
PYX_CIMPORT = re.compile(r"^\s*(?:from\s+cygrad\._kernels\.(\w+)\s+cimport"
                         r"|cimport\s+cygrad\._kernels\.(\w+))", re.M)
CYTHON_DIR = os.path.join(
    "build",
    f"cython.np{np.__version__}-cy{Cython.__version__}-shared" + ("-debug" if DEBUG else ""),
)


def name_of(ext):
    return ext.name.rsplit(".", 1)[-1]


def source_deps(pyx):
    """The .pyx/.pxi/.pxd files of cygrad/_kernels that ``pyx`` reads
    (includes and cimports, followed), itself included."""
    seen = {pyx}
    todo = [pyx]
    while todo:
        path = todo.pop()
        with open(path) as f:
            text = f.read()
        here = os.path.dirname(path)
        found = [os.path.join(here, n) for n in PYX_INCLUDE.findall(text)]
        found += [os.path.join(KERNELS, (a or b) + ".pxd")
                  for a, b in PYX_CIMPORT.findall(text)]
        for dep in found:
            if dep not in seen and os.path.exists(dep):
                seen.add(dep)
                todo.append(dep)
    return seen


def header_deps(sources):
    """The headers of cygrad/_kernels that ``sources`` include, directly or
    through another header (Cython tracks only the direct ones)."""
    seen = set()
    todo = list(sources)
    while todo:
        with open(todo.pop(), errors="replace") as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            path = os.path.join(KERNELS, name)
            if path not in seen and os.path.exists(path):
                seen.add(path)
                todo.append(path)
    return seen


class build_ext(_build_ext):
    """Keeps each finished module in ``build/cache.<platform>-<python>/``
    and reuses it while it is newer than its C file (in
    ``build/cython.<versions>/``) and every header that file includes;
    compiles the rest in parallel (``CYGRAD_BUILD_JOBS``, default 2)."""

    def finalize_options(self):
        super().finalize_options()
        tag = f"{sysconfig.get_platform()}-{sys.implementation.cache_tag}"
        self.build_temp = os.path.join(HERE, "build", f"temp.{tag}")
        self.cache_dir = os.path.join(HERE, "build", f"cache.{tag}")
        if self.parallel is None:
            self.parallel = int(os.environ.get("CYGRAD_BUILD_JOBS", "2"))
        in_tree = self.inplace or getattr(self, "editable_mode", False)
        strip = os.environ.get("CYGRAD_STRIP", "0" if in_tree or DEBUG else "1")
        self.strip = strip != "0" and sys.platform.startswith("linux")

    def build_extension(self, ext):
        out = self.get_ext_fullpath(ext.name)
        kind = "stripped" if self.strip else "full"
        cached = os.path.join(self.cache_dir, kind, os.path.basename(out))
        deps = list(ext.sources) + list(ext.depends)
        # The C file it was compiled from (its folder names the NumPy and
        # Cython versions): a module built for another NumPy is stale.
        origin = cached + ".src"
        same_origin = True
        if os.path.exists(origin):
            with open(origin) as f:
                same_origin = f.read() == ext.sources[0]
        if not self.force and same_origin and os.path.exists(cached) and all(
            os.path.getmtime(d) <= os.path.getmtime(cached) for d in deps
        ):
            if os.path.abspath(cached) != os.path.abspath(out):
                os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
                shutil.copy2(cached, out)
            return
        if self.strip:
            ext.extra_link_args = list(ext.extra_link_args) + ["-Wl,--strip-all"]
        super().build_extension(ext)
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        shutil.copy2(out, cached)
        with open(origin, "w") as f:
            f.write(ext.sources[0])


setup(ext_modules=extensions(), cmdclass={"build_ext": build_ext})
