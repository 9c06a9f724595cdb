#!/usr/bin/env bash
# The mutation test: runs ff-conformance once per fault of mutants/mutant_many.c (each a
# realistic bug, chosen with FF_MUTANT) and once per single-fault mutant plugin, and says
# which the suite catches (non-zero exit with a FAIL or CRASH line). Usage:
#   conformance/mutants/run_all.sh [BUILD_DIR]      (`make mutants`; a few minutes)
set -uo pipefail
build=${1:-build}
conf="$build/bin/ff-conformance"
many="$build/mutants/libff_backend_mutant_many.so"
export FF_BACKEND= FF_BACKEND_PATH= FF_MUTANT_BASE="$build/lib/libff_backend_cpu.so"
faults=(tanh_loses_neg_zero relu_plus_zero round_half_away expm1_naive log1p_naive softplus_threshold_5
        sign_nan_zero exp_rel_1e-5_f64 sigmoid_f32_via_tanh_approx abs_int_min_saturates neg_u8_saturates
        unary_ignores_dst_strides maximum_ignores_nan fmod_divisor_sign eq_nan_equal logical_nan_false
        maximum_signed_zero div_int_by_zero_keeps_x mul_i64_via_double add_i32_saturates bool_add_as_int
        pow_int_neg_exp_zero bitwise_and_as_logical inplace_into_b_reads_dst sum_f32_running
        sum_drops_last_element_past_4096 sum_int_via_double prod_int_via_double max_ignores_nan
        argmax_last_of_ties f2i_wraps nan_to_bool_false i64_to_f32_twice_rounded f2u8_saturates
        fill_i64_via_double fill_ignores_offset matmul_assumes_dense_rows matmul_k0_leaves_dst
        gather_wraps_negative random_ignores_counter_base softmax_no_max_shift ftz_at_init free_keeps_buffer)
caught=0 missed=()
run() { # name, then the environment and backend
  local name=$1; shift
  local out
  out=$(env "$@" "$conf" --backend "${BACKEND}" --timeout 2 2>&1)
  local rc=$?
  local first
  first=$(grep -m1 -E '^(FAIL|CRASH) ' <<<"$out" | cut -c1-110)
  if [ $rc -ne 0 ] && [ -n "$first" ]; then
    caught=$((caught + 1)); printf 'caught  %-36s %s\n' "$name" "$first"
  else
    missed+=("$name"); printf 'MISSED  %-36s exit %d\n' "$name" "$rc"
  fi
}
for f in "${faults[@]}"; do BACKEND=$many run "$f" FF_MUTANT="$f"; done
for m in exp strides oob dtype crash ftz leak; do BACKEND="$build/mutants/libff_backend_mutant_$m.so" run "mutant_$m" X=1; done
total=$(( ${#faults[@]} + 7 ))
echo "mutants: $caught of $total caught${missed:+; missed: ${missed[*]}}"
[ ${#missed[@]} -eq 0 ]
