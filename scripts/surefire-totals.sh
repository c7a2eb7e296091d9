#!/usr/bin/env bash
# Sums the Surefire reports Maven just wrote (make unit, make host): "N tests, S skipped, F failed".
# Surefire prints totals per module only; a newcomer wants one line for the tier.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
reports=(native/target/surefire-reports/TEST-*.xml java/target/surefire-reports/TEST-*.xml
         test-e2e/target/surefire-reports/TEST-*.xml)
((${#reports[@]})) || { echo "no tests run"; exit 0; }
# The first <testsuite ...> element of each report carries the class's counts.
awk 'function count(tag, name,   m) { return match(tag, " " name "=\"[0-9]+\"") ? substr(tag, RSTART + length(name) + 3, RLENGTH - length(name) - 4) + 0 : 0 }
     FNR == 1 { seen = 0 }
     !seen && match($0, /<testsuite [^>]*>/) { t = substr($0, RSTART, RLENGTH); seen = 1
       tests += count(t, "tests"); skipped += count(t, "skipped"); failed += count(t, "failures") + count(t, "errors") }
     END { printf "%d tests, %d skipped, %d failed\n", tests, skipped, failed }' "${reports[@]}"
