"""`python -m fusionflow` (or `fusionflow-info`): the version, the library in use and the
backends: the default one (FF_BACKEND, else the fastest built: cpu_blas, or cpu without
it), those on the search path, and why any of them cannot start. Exits 1 when the default
backend cannot be loaded (an FF_BACKEND that names nothing loadable is an error)."""
import os
import sys

from . import __version__, library_path
from ._lib import C, DiscoverFn


def _discover():
    found = []

    def cb(name, path, _user):
        found.append((name.decode(), path.decode()))

    C.ff_backend_discover(DiscoverFn(cb), None)
    return found


def main(argv=None):
    print("fusionflow %s" % __version__)
    print("library: %s" % library_path)
    env = os.environ.get("FF_BACKEND")
    print("FF_BACKEND: %s" % (env if env else "(unset: the fastest built, cpu_blas, else cpu)"))
    default = C.ff_backend_default()
    status = 0
    if default:
        print("default backend: %s (%s)" % (C.ff_backend_name(default).decode(),
                                            C.ff_backend_description(default).decode()))
    else:
        print("default backend: error: %s" % C.ff_last_error().decode())
        status = 1
    print("available backends:")
    found = _discover()
    for name, path in found:
        be = C.ff_backend_load(name.encode())
        state = ("version %s" % C.ff_backend_version(be).decode()) if be else \
            "cannot start: %s" % C.ff_last_error().decode()
        print("  %-10s %s  [%s]" % (name, path, state))
    if not found:
        print("  (none found next to the library or on FF_BACKEND_PATH)")
    return status


if __name__ == "__main__":
    sys.exit(main())
