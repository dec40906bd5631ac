"""One rank of ``cygrad.multiprocessing.spawn`` (run by the launcher).

argv: payload file, path of the script that called spawn.  The script is
imported as ``__mp_main__`` and stands in for ``__main__`` while ``fn`` and its
arguments are unpickled; then ``fn(rank, *args)`` runs.
"""

import os
import pickle
import sys
import types


def main(argv):
    payload, script = argv
    sys.path.insert(0, os.path.dirname(script))
    module = types.ModuleType("__mp_main__")
    module.__file__ = script
    module.__builtins__ = __builtins__
    sys.modules["__mp_main__"] = module
    with open(script) as f:
        code = compile(f.read(), script, "exec")
    exec(code, module.__dict__)  # noqa: S102  (the caller's own script)
    sys.modules["__main__"] = module
    with open(payload, "rb") as f:
        fn, args = pickle.load(f)
    fn(int(os.environ["RANK"]), *args)


main(sys.argv[1:])
