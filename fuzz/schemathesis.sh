#!/usr/bin/env bash
# Schemathesis against a `causeway dev` cluster it starts itself (2 regions, siblings namespaces
# `cart` and `profile`, in memory, on free loopback ports, change feeds ended after 300 ms so that
# a generated watch does not hold the run until its request timeout), over the OpenAPI document each region
# serves, with every check (`--checks all`). Fails on any 5xx, any reply that breaks the document
# (status, content type, headers, body schema), any schema-invalid request that is accepted, and
# any schema-valid request refused with a code the document could have stated (see
# schemathesis_hooks.py, which replaces Schemathesis' own positive_data_acceptance check).
#
#   fuzz/schemathesis.sh --quick   CI: a fixed seed, 150 cases per operation and region (~1 min)
#   fuzz/schemathesis.sh           `npm run fuzz`: a random seed, 10 minutes per region
#
# Environment: FUZZ_SEED (a seed to replay), FUZZ_MINUTES (per region, long run), FUZZ_VENV (where
# Schemathesis is installed; default a directory under $TMPDIR, reused while it has the pinned
# version). Schemathesis comes from PyPI; the script fails if it cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

SCHEMATHESIS_VERSION=4.32.5
mode=long
case "${1:-}" in
  --quick) mode=quick ;;
  "") ;;
  *)
    echo "usage: fuzz/schemathesis.sh [--quick]" >&2
    exit 2
    ;;
esac

venv="${FUZZ_VENV:-${TMPDIR:-/tmp}/causeway-schemathesis-$SCHEMATHESIS_VERSION}"
if ! "$venv/bin/st" --version 2>/dev/null | grep -q "version $SCHEMATHESIS_VERSION$"; then
  echo "== installing schemathesis $SCHEMATHESIS_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
"$venv/bin/st" --version

work="$(mktemp -d)"
dev_pid=""
cleanup() {
  if [ -n "$dev_pid" ] && kill -0 "$dev_pid" 2>/dev/null; then
    kill -TERM "$dev_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$dev_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$dev_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The CLI through its bin, as `npx causeway` runs it (and the tests): in a checkout it runs the
# TypeScript sources, so no build is needed.
echo "== starting causeway dev"
node "$ROOT/gateway/bin/causeway.js" \
  dev --memory --port 0 --regions 2 --partitions 4 --replicas 3 --siblings cart --siblings profile \
  --max-watch-ms 300 \
  >"$work/dev.out" 2>"$work/dev.err" &
dev_pid=$!
urls=()
for _ in $(seq 1 300); do
  mapfile -t urls < <(sed -n 's/^region [0-9]* ([^)]*) \(http:[^ ]*\)$/\1/p' "$work/dev.out")
  [ "${#urls[@]}" -ge 2 ] && break
  if ! kill -0 "$dev_pid" 2>/dev/null; then break; fi
  sleep 0.1
done
if [ "${#urls[@]}" -lt 2 ]; then
  echo "causeway dev did not start:" >&2
  cat "$work/dev.out" "$work/dev.err" >&2
  exit 1
fi
echo "regions: ${urls[*]}"

if [ "$mode" = quick ]; then
  bounds=(--max-examples 150 --seed "${FUZZ_SEED:-20261125}")
else
  bounds=(--max-time "$((${FUZZ_MINUTES:-10} * 60))")
  if [ -n "${FUZZ_SEED:-}" ]; then bounds+=(--seed "$FUZZ_SEED"); fi
fi

status=0
for url in "${urls[@]}"; do
  echo "== schemathesis ($mode) against $url"
  # From a scratch directory: nothing (a hypothesis database, reports) lands in the repo. One
  # worker: with two, Hypothesis parses lambdas' source in two threads at once, which CPython
  # 3.11's ast module does not survive ("AST constructor recursion depth mismatch").
  (
    cd "$work"
    PYTHONPATH="$ROOT/fuzz" SCHEMATHESIS_HOOKS=schemathesis_hooks "$venv/bin/st" run \
      "$url/v1/openapi.json" \
      --checks all --exclude-checks positive_data_acceptance \
      --mode all --workers 1 --request-timeout 70 \
      --generation-database none --no-color \
      "${bounds[@]}"
  ) || status=$?
  if ! kill -0 "$dev_pid" 2>/dev/null; then
    echo "causeway dev died during the run:" >&2
    cat "$work/dev.err" >&2
    exit 1
  fi
done
# Anything the gateway logged at error level is a bug even when every reply was fine.
if grep -q '"level":50' "$work/dev.err"; then
  echo "the gateway logged errors:" >&2
  grep '"level":50' "$work/dev.err" | head -20 >&2
  status=1
fi
exit "$status"
