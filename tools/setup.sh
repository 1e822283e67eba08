#!/usr/bin/env bash
# Set up this checkout on Debian: system packages, a virtualenv in .venv and
# the project installed into it (editable). Safe to run again.
#
#   tools/setup.sh [--with-tests]
#
# Needs root, or sudo, to install the Debian packages the first time.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(rabbitmq-server python3-venv)
if [[ "${1:-}" == "--with-tests" ]]; then
    packages+=(postgresql)
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
.venv/bin/pip install -q --upgrade pip >/dev/null
req_args=(-r requirements.txt)
[[ "${1:-}" == "--with-tests" ]] && req_args+=(-r test-requirements.txt)
.venv/bin/pip install -q "${req_args[@]}" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/pip install -q --no-deps -e . 2>&1 | grep -v "^WARNING: Location" || true
echo "setup: ready ($(.venv/bin/python --version), project installed in .venv)"
