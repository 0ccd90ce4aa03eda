#!/usr/bin/env bash
# The CI script of examples/cli-ci: a known sandbox, then a smoke test that fails the job on the
# first command that fails (merx exits 1 on an API error, 2 on a usage error).
#
#   MERX_API_KEY (a sandbox key), MERX_BASE_URL and MERX_GRPC_URL in the environment;
#   MERX (how to run the CLI) defaults to `npx merx`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
merx() { ${MERX:-npx merx} "$@"; }

merx whoami --fields profile,base_url,merchant

echo "== reset the sandbox and apply the fixtures"
merx sandbox reset --yes --json > /dev/null
merx fixtures apply "$here/fixtures.json" > fixtures-applied.json

echo "== import the catalogue over gRPC"
merx import products "$here/catalogue.csv" > import-summary.json
test "$(jq .failed import-summary.json)" = 0

echo "== smoke test"
test "$(merx products list --all | jq length)" = 5
test "$(merx products list --sku CI-CAP | jq -r '.data[0].attributes.colour')" = navy
product_id="$(merx products list --sku CI-SHIRT | jq -r '.data[0].id')"
merx products update "$product_id" --inventory-quantity 11 --if-match '"v1"' > /dev/null
test "$(merx products retrieve "$product_id" | jq .inventory_quantity)" = 11
test "$(merx connections list | jq '.data[0].rule_ids | length')" = 1
merx trigger orders.created > /dev/null
test "$(merx audit verify | jq .valid)" = true

# A stale ETag must fail with exit code 1 and a problem on stderr, never pass silently.
set +e
merx products update "$product_id" --title "Stale" --if-match '"v1"' 2> stale.err > /dev/null
code=$?
set -e
test "$code" = 1 && grep -q '412' stale.err

merx export products > products.jsonl
test "$(wc -l < products.jsonl)" -eq 5
echo "smoke test passed"
