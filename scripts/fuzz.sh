#!/usr/bin/env bash
# Runs rankd's libFuzzer targets (built by `make fuzz` into build-fuzz/), each for a given time,
# and fails if any finds a crash, a sanitizer report, a broken invariant, a leak or a timeout.
# Usage: scripts/fuzz.sh SECONDS_PER_TARGET [TARGET...]   (default: every target built)
#
# Each target starts from its committed seeds (fuzz/corpus/<target>/, read only) plus what
# earlier runs found (build-fuzz/corpus/<target>/, where new inputs go); a failing input is
# saved in build-fuzz/artifacts/<target>/ and the command to replay it is printed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
seconds="${1:?usage: scripts/fuzz.sh SECONDS_PER_TARGET [TARGET...]}"
shift
targets=("$@")
# By default every target built (fuzz/CMakeLists.txt builds a target only when its code is in
# the tree, e.g. the HTTP request parser).
if ((${#targets[@]} == 0)); then
  for binary in "$build"/*_fuzz; do
    if [ -x "$binary" ]; then
      name="$(basename "$binary")"
      targets+=("${name%_fuzz}")
    fi
  done
fi
if ((${#targets[@]} == 0)); then
  echo "fuzz: no targets built in $build (run make fuzz)" >&2
  exit 2
fi

failed=()
for target in "${targets[@]}"; do
  binary="$build/${target}_fuzz"
  [ -x "$binary" ] || { echo "fuzz: $binary is not built (run make fuzz)" >&2; exit 2; }
  corpus="$build/corpus/$target"
  artifacts="$build/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  if [ -d "$root/fuzz/corpus/$target" ]; then seeds=("$root/fuzz/corpus/$target"); fi
  dict=()
  if [ -f "$root/fuzz/$target.dict" ]; then dict=(-dict="$root/fuzz/$target.dict"); fi
  # A target's own libFuzzer flags, one line in fuzz/<target>.flags (e.g. plan's -entropic=0).
  flags=()
  if [ -f "$root/fuzz/$target.flags" ]; then read -ra flags <"$root/fuzz/$target.flags"; fi
  log="$build/$target.log"
  echo "fuzz: $target for ${seconds}s"
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" "${flags[@]}" \
    "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^#[0-9]+ *DONE' "$log" | tail -2 | sed 's/^/  /'
  else
    failed+=("$target")
    echo "fuzz: $target FAILED; the end of $log:" >&2
    tail -40 "$log" >&2
    echo "fuzz: replay with: $binary $artifacts/<file>" >&2
  fi
done

if ((${#failed[@]})); then
  echo "fuzz: failures in ${failed[*]}" >&2
  exit 1
fi
