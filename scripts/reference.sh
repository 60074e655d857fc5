#!/bin/bash
# The reference result behind docs/results/ and the README's table (`make reference`): the quick
# preset over every suite and the open-loop curves (scripts/open-loop.sh), reduced to their medians
# in docs/reference/result.json, then the pages and the README's table regenerated from it. It measures: run it on the reference machine, with
# nothing else running. The full result stays in results/reference-<UTC time>/ (not committed).
#
#   scripts/reference.sh [IPCLAB]      (default build/release/ipclab)
set -euo pipefail
cd "$(dirname "$0")/.."

ipclab=${1:-build/release/ipclab}
if [ ! -x "$ipclab" ]; then
  echo "reference.sh: $ipclab is not built; run \`make build\` (or pass the ipclab binary)" >&2
  exit 2
fi
reference=docs/reference/result.json
out=results/reference-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p results docs/reference
mkdir "$out"  # a new folder: nothing of an earlier run is overwritten

rc=0
"$ipclab" run --preset quick --json "$out/full.json" || rc=$?
if [ "$rc" -ne 0 ]; then
  # A failed benchmark must not become the reference: the earlier one stays.
  echo "reference.sh: ipclab run exited with $rc (see above); $reference and the pages are unchanged" >&2
  exit "$rc"
fi
# The open-loop curves and capacities (scripts/open-loop.sh), merged into the same reference.
bash scripts/open-loop.sh "$ipclab" "$out" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "reference.sh: scripts/open-loop.sh exited with $rc (see above); $reference and the pages are unchanged" >&2
  exit "$rc"
fi
"$ipclab" report "$out/full.json" "$out"/open-loop-*.json --reduce "$reference"
"$ipclab" report "$reference" --pages docs/results --readme README.md
echo "reference: $reference (full result: $out/full.json); review and commit $reference, docs/results/ and README.md"
