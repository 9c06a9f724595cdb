"""A stand-in for SciPy (not installed by the project: pygcn needs only a little of
scipy.sparse, in sparse.py). Last on sys.path: an installed SciPy is used where there is one."""
