#!/usr/bin/env bash
# check_abi.sh LIB SRC - the shared library's ABI is its SONAME's committed
# baseline (SRC/abi/SONAME.abi, written by scripts/abi-baseline), compared by
# abidiff over the public headers' types (the layouts of the opaque handles,
# which callers only point at, do not count: scripts/abi-opaque). Any
# difference fails: a compatible
# addition updates the baseline in the same commit; anything else bumps the
# SONAME, which then needs a baseline of its own. Skipped (77) for a library
# without debug info, which abidiff cannot read types from.
set -uo pipefail
lib=$1
src=$2
if ! command -v abidiff >/dev/null; then
    echo "abi: abidiff not found (scripts/deps installs abigail-tools)"
    echo "abi: 0 passed, 1 failed"
    exit 1
fi
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    echo "abi: $lib has no debug info: skipped"
    exit 77
fi
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
base="$src/abi/$soname.abi"
if [[ ! -e $base ]]; then
    echo "abi: no baseline for $soname ($base): run scripts/abi-baseline and commit it"
    echo "abi: 0 passed, 1 failed"
    exit 1
fi
suppr=$(mktemp)
trap 'rm -f "$suppr"' EXIT
"$src/scripts/abi-opaque" "$src/include/zklock" >"$suppr"
report=$(abidiff --suppressions "$suppr" --headers-dir2 "$src/include/zklock" --drop-private-types \
    "$base" "$lib")
rc=$?
if ((rc == 0)); then
    echo "abi: $soname matches abi/$soname.abi ($(grep -c '<elf-symbol ' "$base") symbols)"
    echo "abi: 1 passed, 0 failed"
    exit 0
fi
printf '%s\n' "$report"
if ((rc & 8)); then
    echo "abi: an incompatible change under the same SONAME $soname: bump the SONAME"
elif ((rc & 4)); then
    echo "abi: the ABI changed: if it only adds, run scripts/abi-baseline and commit abi/$soname.abi;"
    echo "abi: otherwise bump the SONAME"
else
    echo "abi: abidiff failed (rc $rc)"
fi
echo "abi: 0 passed, 1 failed"
exit 1
