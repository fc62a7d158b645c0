#!/usr/bin/env bash
# Bootstrap once, then run kraft.
#
#   ./kraft.sh review          the review pipeline: model-check, simulate, conform, audit, summarise
#   ./kraft.sh test [ARGS]     the test suite (pytest ARGS) on every core (pytest-xdist); the
#                              --durations table also goes to .ci/artifacts/durations.txt
#   ./kraft.sh test --fast [ARGS]  the fast tier: no JVM (no TLC, no Spark), no slow test, no bug
#                              variant search, the dev Hypothesis profile
#   ./kraft.sh <cmd> ...       any other kraft subcommand (check, simulate, conform, audit, ...)
#
# The first run (and any run after pyproject.toml, setup.py or the C source change) creates .venv,
# installs the project and its Python dependencies into it (building the compiled linearizability
# search and row loops, spark_validation/_*.c; gcc and the Python headers are installed if missing), and
# installs a Java runtime (>= 17, for TLC and Spark) if none is found; `./kraft.sh test` also installs
# chromium if missing (the report's browser test).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv="$here/.venv"
stamp="$venv/.kraft-installed"
python=${PYTHON:-python3}

say() { printf 'kraft.sh: %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else say "need root to run: $*"; return 1; fi
}

java_major() {
  local j=${JAVA_HOME:+$JAVA_HOME/bin/java}
  j=${j:-$(command -v java || true)}
  [ -n "$j" ] && [ -x "$j" ] || { echo 0; return; }
  "$j" -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

ensure_java() {
  local major
  major=$(java_major)
  if [ "${major:-0}" -ge 17 ] 2>/dev/null; then return; fi
  say "no Java >= 17 found (found: ${major:-none}); installing a headless JRE with apt-get"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends default-jre-headless \
    || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless
  major=$(java_major)
  [ "${major:-0}" -ge 17 ] || { say "Java >= 17 is still missing after the install (found: ${major:-none})"; exit 2; }
}

ensure_chromium() {  # for the report's browser test (tests/review/test_browser.py), as Java for TLC
  if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then return; fi
  say "no chromium found; installing Debian's chromium with apt-get (the report's browser test opens the page in it)"
  if ! { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends chromium; }; then
    say "chromium could not be installed: the browser tests will be skipped"
  fi
}

ensure_cc() {
  # the compiled parts are optional (setup.py), so a failed install here only costs speed
  local inc
  inc=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null || true)
  if command -v cc >/dev/null 2>&1 && [ -f "$inc/Python.h" ]; then return; fi
  say "no C compiler or Python headers; installing gcc and python3-dev with apt-get (for the compiled parts, spark_validation/_*.c)"
  { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends gcc libc6-dev python3-dev; } \
    || say "gcc/python3-dev could not be installed: the linearizability checker will use its Python search"
}

ensure_venv() {
  local f stale=
  for f in "$here/pyproject.toml" "$here/setup.py" "$here"/spark_validation/*.c; do
    [ "$f" -nt "$stamp" ] && stale=1
  done
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ -z "$stale" ]; then return; fi
  if [ ! -x "$venv/bin/python" ]; then
    say "creating $venv"
    if ! "$python" -m venv --system-site-packages "$venv" 2>/dev/null; then
      say "python venv support missing; installing python3-venv"
      as_root apt-get update -qq
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip
      rm -rf "$venv"
      "$python" -m venv --system-site-packages "$venv"
    fi
  fi
  ensure_cc
  say "installing kraft and its dependencies into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$here"
  # setup.py builds the compiled parts with the machine's C compiler; they are optional
  "$venv/bin/python" -c 'import spark_validation._linkernel, spark_validation._rowkernel' 2>/dev/null \
    || say "the compiled search and row loops were not built (no C compiler or Python headers?): the same code runs in Python, slower, with the same results"
  # Spark's local driver starts about 0.8 s sooner with its classes in a class-data-sharing archive
  # (spark_validation/session.py cds_archive); best effort: Spark runs without one
  "$venv/bin/python" -m spark_validation.session --train-cds || say "no Spark class archive (Spark starts without it)"
  touch "$stamp"
}

run_tests() {
  local tier=()
  if [ "${1:-}" = --fast ]; then
    shift
    # tests/no_jvm.py fails the run if a test starts java under KRAFT_NO_JVM=1
    export KRAFT_NO_JVM=1
    tier=(-m "not slow and not tlc and not spark and not jvm and not search" --hypothesis-profile dev)
  else
    ensure_chromium
  fi
  cd "$here" && exec "$venv/bin/python" -m pytest -n auto --dist loadgroup \
    --durations-file=.ci/artifacts/durations.txt "${tier[@]}" "$@"
}

[ "${1:-} ${2:-}" = "test --fast" ] || ensure_java  # the fast tier needs no Java
ensure_venv

cmd=${1:-review}
[ $# -gt 0 ] && shift
case "$cmd" in
  test) run_tests "$@" ;;
  *)    exec "$venv/bin/kraft" "$cmd" "$@" ;;
esac
