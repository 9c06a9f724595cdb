"""`python -m fusionflow` (or `fusionflow-info`): the version, the library in use and the
backends: those on the search path, the default one, and why any other cannot start."""
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
    default = C.ff_backend_default()
    if not default:
        print("default backend: error: %s" % C.ff_last_error().decode(), file=sys.stderr)
        return 1
    print("default backend: %s (%s)" % (C.ff_backend_name(default).decode(),
                                        C.ff_backend_description(default).decode()))
    print("available backends:")
    for name, path in _discover():
        be = C.ff_backend_load(name.encode())
        state = ("version %s" % C.ff_backend_version(be).decode()) if be else \
            "cannot start: %s" % C.ff_last_error().decode()
        print("  %-10s %s  [%s]" % (name, path, state))
    return 0


if __name__ == "__main__":
    sys.exit(main())
