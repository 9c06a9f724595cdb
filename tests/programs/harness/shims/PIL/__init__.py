"""A stand-in for Pillow where it is not installed (CI): only what super_resolution's dataset.py
calls, on the 8-bit grayscale PNGs the harness writes (harness/pngio.py)."""
