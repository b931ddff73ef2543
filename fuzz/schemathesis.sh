#!/usr/bin/env bash
# Schemathesis against `causeway dev` clusters it starts itself, one per backend: the embedded
# (LevelDB, in memory) one and `--backend redis` (redis-servers and gateway processes). Each has
# 2 regions, siblings namespaces `cart` and `profile`, a transactional namespace `acct` (so the
# transaction routes are in the document), an API key, free loopback ports, and change feeds
# ended after 300 ms so that a generated watch does not hold the run until its request timeout.
# Over the OpenAPI document each region serves, with every check (`--checks all`) and the key as
# `authorization: Bearer`: fails on any 5xx, any reply that breaks the document (status, content
# type, headers, body schema, response time), any schema-invalid request that is accepted, and
# any schema-valid request refused with a code the document could have stated (see
# schemathesis_hooks.py, which replaces Schemathesis' own positive_data_acceptance check). A
# short pass without the key comes first: every client route must answer 401, never a 5xx.
#
#   fuzz/schemathesis.sh --quick   CI: a fixed seed, 60 cases per operation and backend (region
#                                  0), ~2.5 min for both
#   fuzz/schemathesis.sh           `npm run fuzz`: a random seed, 10 minutes per region and backend
#
# Environment: FUZZ_SEED (a seed to replay), FUZZ_MINUTES (per region, long run), FUZZ_BACKENDS
# (default "level redis"), FUZZ_VENV (where Schemathesis is installed; default a directory under
# $TMPDIR, reused while it has the pinned version). Schemathesis comes from PyPI and the Redis
# backend needs redis-server: the script fails, never skips, when either cannot be had.
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
stop_dev() {
  if [ -n "$dev_pid" ] && kill -0 "$dev_pid" 2>/dev/null; then
    kill -TERM "$dev_pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$dev_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$dev_pid" 2>/dev/null || true
  fi
  dev_pid=""
}
cleanup() {
  stop_dev
  rm -rf "$work"
}
trap cleanup EXIT

# A fresh key per run: nothing to leak, and the run proves the key is what lets requests in.
api_key="fuzz-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"

if [ "$mode" = quick ]; then
  bounds=(--max-examples 60 --seed "${FUZZ_SEED:-20261125}")
else
  bounds=(--max-time "$((${FUZZ_MINUTES:-10} * 60))")
  if [ -n "${FUZZ_SEED:-}" ]; then bounds+=(--seed "$FUZZ_SEED"); fi
fi

# One Schemathesis run; the rest of its arguments go to `st run`. From a scratch directory:
# nothing (a hypothesis database, reports) lands in the repo. One worker: with two, Hypothesis
# parses lambdas' source in two threads at once, which CPython 3.11's ast module does not survive
# ("AST constructor recursion depth mismatch").
schemathesis() {
  (
    cd "$work"
    PYTHONPATH="$ROOT/fuzz" SCHEMATHESIS_HOOKS=schemathesis_hooks "$venv/bin/st" run \
      --checks all --exclude-checks "positive_data_acceptance${EXCLUDE:+,$EXCLUDE}" \
      --mode all --workers 1 --request-timeout 70 \
      --generation-database none --no-color "$@"
  )
}

status=0
fuzz_backend() {
  local backend="$1" out="$work/$1.out" err="$work/$1.err" started=$SECONDS
  local -a urls=()
  echo "== starting causeway dev --backend $backend"
  # The CLI through its bin, as `npx causeway` runs it (and the tests): in a checkout it runs the
  # TypeScript sources, so no build is needed. Refused requests are not rate-limited here: the
  # pass without the key is nothing but refusals.
  local -a args=(dev --backend "$backend" --port 0 --regions 2 --partitions 4 --replicas 3
    --siblings cart --siblings profile --transactional acct --api-key "$api_key"
    --rate-limit-refused 0 --max-watch-ms 300)
  if [ "$backend" = level ]; then args+=(--memory); fi
  node "$ROOT/gateway/bin/causeway.js" "${args[@]}" >"$out" 2>"$err" &
  dev_pid=$!
  for _ in $(seq 1 600); do
    mapfile -t urls < <(sed -n 's/^region [0-9]* ([^)]*) \(http:[^ ]*\)$/\1/p' "$out")
    [ "${#urls[@]}" -ge 2 ] && break
    if ! kill -0 "$dev_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  if [ "${#urls[@]}" -lt 2 ]; then
    echo "causeway dev --backend $backend did not start:" >&2
    cat "$out" "$err" >&2
    exit 1
  fi
  echo "regions: ${urls[*]} (started in $((SECONDS - started)) s)"

  # The quick run fuzzes region 0 (both serve the same document and code); the long one each.
  local -a targets=("${urls[@]}")
  if [ "$mode" = quick ]; then targets=("${urls[0]}"); fi
  for url in "${targets[@]}"; do
    # The document itself needs the key: fetched with it, then fuzzed without (a few cases per
    # operation; client routes must answer 401 as the document allows, never a 5xx).
    python3 -c 'import sys, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"authorization": "Bearer " + sys.argv[2]})
sys.stdout.buffer.write(urllib.request.urlopen(request, timeout=30).read())' \
      "$url/v1/openapi.json" "$api_key" >"$work/openapi-$backend.json"
    echo "== schemathesis without the key against $url ($backend)"
    # Authentication comes before routing: an undeclared method is 401 too, not 405 (the
    # gateway tells no one without a key which routes exist).
    EXCLUDE=unsupported_method schemathesis "$work/openapi-$backend.json" --url "$url" \
      --max-examples 3 --seed "${FUZZ_SEED:-20261125}" || status=$?
    echo "== schemathesis ($mode, authenticated) against $url ($backend)"
    schemathesis "$url/v1/openapi.json" -H "authorization: Bearer $api_key" "${bounds[@]}" ||
      status=$?
    if ! kill -0 "$dev_pid" 2>/dev/null; then
      echo "causeway dev --backend $backend died during the run:" >&2
      cat "$err" >&2
      exit 1
    fi
  done
  stop_dev
  # Anything a gateway logged at error level is a bug even when every reply was fine.
  if grep -q '"level":50' "$err"; then
    echo "the gateway ($backend) logged errors:" >&2
    grep '"level":50' "$err" | head -20 >&2
    status=1
  fi
  echo "== $backend: $((SECONDS - started)) s"
}

for backend in ${FUZZ_BACKENDS:-level redis}; do
  case "$backend" in
    level) ;;
    redis)
      if ! command -v redis-server >/dev/null 2>&1; then
        echo "redis-server is not installed: the Redis backend cannot be fuzzed" >&2
        exit 1
      fi
      ;;
    *)
      echo "FUZZ_BACKENDS: level or redis, not $backend" >&2
      exit 2
      ;;
  esac
  fuzz_backend "$backend"
done
exit "$status"
