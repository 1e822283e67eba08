#!/usr/bin/env bash
# Set up this checkout on Debian: system packages, a virtualenv in .venv and
# the project installed into it (editable). Safe to run again.
#
#   tools/setup.sh [--with-tests | --with-unit-tests]
#
# --with-tests adds what the whole suite needs (PostgreSQL, MariaDB, a
# Galera cluster behind HAProxy, and the test, benchmark and documentation
# requirements); --with-unit-tests only the test requirements.
# Needs root, or sudo, to install the Debian packages the first time.
set -euo pipefail
cd "$(dirname "$0")/.."

with=${1:-}
packages=(rabbitmq-server python3-venv)
if [[ "$with" == "--with-tests" ]]; then
    # galera-4, rsync (its state transfers, which look for their daemon
    # with iproute2's ss) and haproxy: tests/fixtures/galera.py.
    packages+=(postgresql mariadb-server galera-4 rsync iproute2 haproxy)
fi

missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" \
        || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
    echo "setup: creating .venv with $($python --version)"
    "$python" -m venv .venv
fi
req_args=(-r requirements.txt)
case "$with" in
    --with-tests)
        req_args+=(-r test-requirements.txt -r benchmarks/requirements.txt
                   -r doc/requirements.txt) ;;
    --with-unit-tests)
        req_args+=(-r test-requirements.txt) ;;
esac
# pip's output goes to a log, shown only if it fails.
log=.venv/pip.log
if ! { .venv/bin/pip install --upgrade pip \
       && .venv/bin/pip install "${req_args[@]}" \
       && .venv/bin/pip install --no-deps -e .; } > "$log" 2>&1; then
    tail -40 "$log" >&2
    echo "setup: pip failed; full log in $log" >&2
    exit 1
fi
echo "setup: ready ($(.venv/bin/python --version), project installed in .venv)"
