#!/bin/sh
# ff-embed --dtype int8 against its f32 embeddings on a varied set of sentences (short,
# long, punctuation, non-English): every cosine must be >= 0.99 (issue 35's error budget).
# Exit 77 (skipped) when the model has not been fetched.
set -eu
embed=$1
dir=$("$embed" --print-model-dir)
test -f "$dir/model.safetensors" || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/s.txt" <<'TXT'
hello
The weather is lovely today.
It's so sunny outside!
He drove to the stadium.
A man is eating food.
Un café, s'il vous plaît.
The quick brown fox jumps over the lazy dog while the farmer watches from the porch of his old wooden house.
Quantization maps floating point values to eight bit integers.
What is 2 + 2? Four, of course.
Der schnelle braune Fuchs springt über den faulen Hund.
TXT
"$embed" < "$tmp/s.txt" > "$tmp/f32.txt"
"$embed" --dtype int8 < "$tmp/s.txt" > "$tmp/int8.txt"
awk 'NR == FNR { for (i = 1; i <= NF; i++) a[FNR, i] = $i; n = FNR; next }
     { d = 0; p = 0; q = 0
       for (i = 1; i <= NF; i++) { d += a[FNR, i] * $i; p += a[FNR, i] ^ 2; q += $i ^ 2 }
       c = d / sqrt(p * q); printf "sentence %d: cosine %.5f\n", FNR, c
       if (!(c >= 0.99)) bad++; m = FNR }
     END { if (m != n || n != 10) { print "expected 10 embeddings of each"; exit 1 }
           if (bad) { print bad " sentence(s) below 0.99"; exit 1 } print "int8 cosines >= 0.99" }' \
    "$tmp/f32.txt" "$tmp/int8.txt"
