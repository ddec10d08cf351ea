#!/usr/bin/env bash
# Records how long each stage of `make test` takes, so the suite's time is known where it goes
# (docs/testing.md keeps the latest table).
#   scripts/stage_times.sh reset                 start a new record
#   scripts/stage_times.sh begin STAGE           a stage starts (prints "== STAGE (HH:MM:SS)")
#   scripts/stage_times.sh end STAGE             it ended: its seconds are recorded
#   scripts/stage_times.sh report                prints each stage's time and the total
# The record is build/stage-times.tsv (stage, seconds).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/build"
record="$dir/stage-times.tsv"
mkdir -p "$dir"
case "${1:-}" in
  reset) : >"$record" ;;
  begin)
    date +%s >"$dir/.stage-$2.start"
    echo "== $2 ($(date +%T))"
    ;;
  end)
    start=$(cat "$dir/.stage-$2.start")
    rm -f "$dir/.stage-$2.start"
    printf '%s\t%d\n' "$2" $(($(date +%s) - start)) >>"$record"
    ;;
  report)
    [ -s "$record" ] || exit 0
    awk -F'\t' '{ printf "  %-16s %4d:%02d\n", $1, $2 / 60, $2 % 60; total += $2 }
      END { printf "  %-16s %4d:%02d\n", "total", total / 60, total % 60 }' "$record"
    ;;
  *) echo "usage: stage_times.sh reset|begin STAGE|end STAGE|report" >&2; exit 2 ;;
esac
