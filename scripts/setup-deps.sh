#!/usr/bin/env bash
# Installs the Debian packages FusionFlow needs, if any are missing and we can
# (root + apt-get). Without root it prints the command to run and carries on: the
# build then tells what is missing.
set -u
pkgs=(build-essential cmake pkg-config zlib1g-dev libopenblas-dev libfftw3-dev libdnnl-dev libdlpack-dev
      dataset-fashion-mnist python3 python3-dev python3-numpy python3-pytest python3-venv python3-pip gnuplot-nox
      clang ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd libclblast-dev clinfo libopenmpi-dev openmpi-bin
      libcjson-dev libzip-dev)
[ -n "${FF_EXTRA_PKGS:-}" ] && pkgs+=(${FF_EXTRA_PKGS})
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "setup: run as root: apt-get install -y ${missing[*]}" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  || { echo "setup: apt-get install failed" >&2; exit 1; }
echo "setup: installed ${missing[*]}"
