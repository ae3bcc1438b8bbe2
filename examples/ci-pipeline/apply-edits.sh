#!/usr/bin/env bash
# Applies a batch of edits (JSONL, one toolbelt call per line) to a project in one `toolbelt exec`
# session, prints what happened, and fails the job when any edit did not apply.
#
#   apply-edits.sh ROOT EDITS.jsonl     apply EDITS.jsonl to ROOT
#   apply-edits.sh demo [bad]           make a demo project and apply a good (or a bad) batch
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
toolbelt=(node "$here/../../packages/toolbelt/dist/bin.js")
command -v npx >/dev/null && [ -x "$here/node_modules/.bin/toolbelt" ] && toolbelt=("$here/node_modules/.bin/toolbelt")

if [ "${1:-}" = "demo" ]; then
  root="$(mktemp -d)"
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$root/configs" "$root/src"
  echo '{ "agent": { "edit_tool": "structured_patch" } }' > "$root/configs/app.json"
  printf 'export const version = "1.0.0";\nexport const name = "demo";\n' > "$root/src/meta.ts"
  edits="$root/edits.jsonl"
  cat > "$edits" <<'JSONL'
{"id":"bump-version","tool":"structured_patch","input":{"path":"src/meta.ts","old_string":"1.0.0","new_string":"1.1.0"}}
{"id":"add-changelog","tool":"write_file","input":{"path":"CHANGELOG.md","content":"# 1.1.0\n\n- demo release\n"}}
JSONL
  if [ "${2:-}" = "bad" ]; then
    echo '{"id":"rename-missing","tool":"structured_patch","input":{"path":"src/meta.ts","old_string":"no such text","new_string":"x"}}' >> "$edits"
  fi
else
  root="${1:?usage: apply-edits.sh ROOT EDITS.jsonl | demo [bad]}"
  edits="${2:?usage: apply-edits.sh ROOT EDITS.jsonl}"
fi

results="$(mktemp)"
status=0
"${toolbelt[@]}" exec --root "$root" < "$edits" > "$results" || status=$?

# One line per call: id, and either ok or the error code and message.
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
  for (const line of lines) {
    const { id, tool, result } = JSON.parse(line);
    console.log(result.kind === "error" ? `FAIL ${id ?? tool}: ${result.code} ${result.message.split("\n")[0]}` : `ok   ${id ?? tool}`);
  }' "$results"
rm -f "$results"

if [ "$status" -ne 0 ]; then
  echo "some edits did not apply (toolbelt exec exited $status)" >&2
  exit 1
fi
echo "all edits applied"
