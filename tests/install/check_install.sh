#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds a program outside the
# tree against it twice: with CMake's find_package and with pkg-config. Both must run.
set -euo pipefail
build=$1; src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -1)
cmake -S "$src/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
# the installed plugins are found beside the installed core, not in the build tree
LD_LIBRARY_PATH="$libdir" FF_BACKEND_PATH= "$tmp/consumer/consumer"
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs fusionflow)
cc -std=c11 "$src/consumer/main.c" $flags -o "$tmp/consumer_pc"
LD_LIBRARY_PATH="$libdir" FF_BACKEND_PATH= "$tmp/consumer_pc"
echo "install check: find_package and pkg-config consumers ran"
