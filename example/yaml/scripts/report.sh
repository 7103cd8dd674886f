#!/bin/sh
# A script job's command: the sharding context (JSON) is the last argument
# and $SHARDJOB_SHARDING_CONTEXT. Anything written to stdout or stderr goes
# to the instance's log; exit non-zero to fail the item.
set -eu
for ctx; do :; done # the last argument
mkdir -p "${REPORT_DIR:-/tmp/shardjob-reports}"
echo "report $1 $2 for $ctx"
printf '%s\n' "$ctx" >> "${REPORT_DIR:-/tmp/shardjob-reports}/runs.jsonl"
