#!/usr/bin/env bash
# tests/coverage-report.sh BUILD_DIR - what the tests that ran in BUILD_DIR
# (configured with -DZKL_COVERAGE=ON) executed of the library: lines and
# branches per source file, and every line no test reached, so that an
# untested error path shows up by name. Uses gcov only (it comes with gcc).
#
# Writes BUILD_DIR/coverage/: summary.txt (the table printed here),
# uncovered.txt (file:line: source of each line never run) and the .gcov files.
set -euo pipefail
dir=$(cd "${1:?usage: tests/coverage-report.sh BUILD_DIR}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
obj=$dir/CMakeFiles/zklock_obj.dir
[[ -d "$obj" ]] || { echo "coverage-report: no library objects under $dir" >&2; exit 2; }
out=$dir/coverage
rm -rf "$out"
mkdir -p "$out"
cd "$out"

# row NAME LINES LINES_RUN BRANCHES BRANCHES_TAKEN: one line of the table
row() {
    awk -v f="$1" -v l="$2" -v lc="$3" -v b="$4" -v bc="$5" \
        'BEGIN {printf "%-32s %8d %7.1f%% %10d %9.1f%%\n", f, l, l ? 100 * lc / l : 100, b, b ? 100 * bc / b : 100}'
}

total_l=0 total_lc=0 total_b=0 total_bc=0
printf '%-32s %8s %8s %10s %10s\n' file lines run% branches taken% >summary.txt
: >uncovered.txt
while IFS= read -r gcda; do
    rel=${gcda#"$obj"/}
    src=$root/${rel%.gcda}
    [[ -f "$src" ]] || continue
    # -o names the object file: CMake calls it x.c.o, so its counters are x.c.gcda
    gcov -b -c -o "${gcda%.gcda}.o" "$src" >/dev/null 2>&1 || continue
    # gcov names its output after the source's base name: keep one per path
    gc=$(basename "$src").gcov
    [[ -f "$gc" ]] || continue
    mv "$gc" "${rel//\//_}.gcov"
    gc=${rel//\//_}.gcov
    # counts from the .gcov itself: lines "#####:" never ran, numbers ran;
    # branches "taken N" / "never executed" / "taken 0"
    read -r l lc b bc < <(awk '
        /^ *#####:/ {l++; next}
        /^ *[0-9]+\*?:/ {l++; lc++; next}
        /^branch/ {b++; if ($3 == "taken" && $4 + 0 > 0) bc++}
        END {print l + 0, lc + 0, b + 0, bc + 0}' "$gc")
    awk -v f="${rel%.gcda}" -F: '/^ *#####:/ {sub(/^ +/, "", $3); line=$0; sub(/^[^:]*:[^:]*:/, "", line); print f ":" $2 + 0 ": " line}' "$gc" >>uncovered.txt
    row "${rel%.gcda}" "$l" "$lc" "$b" "$bc" >>summary.txt
    total_l=$((total_l + l)) total_lc=$((total_lc + lc)) total_b=$((total_b + b)) total_bc=$((total_bc + bc))
done < <(find "$obj" -name '*.gcda' | sort)
row total "$total_l" "$total_lc" "$total_b" "$total_bc" >>summary.txt
cat summary.txt
echo "coverage: $(wc -l <uncovered.txt) lines never run, listed in $out/uncovered.txt"
