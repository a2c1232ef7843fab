#!/usr/bin/env bash
# Quick start without a ROS distribution: builds .venv in the repository root
# from PyPI (the exact versions of requirements/standalone.lock.txt + this package,
# editable), then
#   bash scripts/quickstart.sh demo [ARGS...]   runs python -m rbd_estimator.demo ARGS
#   bash scripts/quickstart.sh test [ARGS...]   runs python -m pytest -q test ARGS
set -euo pipefail

usage() {
    echo "usage: bash scripts/quickstart.sh {demo|test} [extra args]" >&2
    exit 2
}

[[ $# -ge 1 ]] || usage
mode="$1"
shift
case "$mode" in
    demo | test) ;;
    *) usage ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

venv="$root/.venv"
py="$venv/bin/python"
stamp="$venv/.stamp"

if command -v python3.11 >/dev/null 2>&1; then
    base_python=python3.11
else
    base_python=python3
fi

# A .venv whose interpreter no longer runs (moved, or its base Python removed)
# is rebuilt from scratch.
if [[ -e "$venv" ]] && ! "$py" -c 'import sys' >/dev/null 2>&1; then
    echo "quickstart: $venv is broken; recreating it" >&2
    rm -rf "$venv"
fi
if [[ ! -x "$py" ]]; then
    echo "quickstart: creating $venv with $($base_python --version 2>&1)" >&2
    "$base_python" -m venv "$venv"
fi

want="$(cat requirements/standalone.txt requirements/standalone.lock.txt setup.py pyproject.toml | sha256sum | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
if [[ "$want" != "$have" ]]; then
    start=$SECONDS
    echo "quickstart: installing dependencies into $venv" >&2
    "$py" -m pip install --upgrade pip
    "$py" -m pip install -r requirements/standalone.lock.txt
    # the build environment is this one (the package's build-system requirements are the runtime's)
    "$py" -m pip install --no-build-isolation -e .
    echo "$want" >"$stamp"
    echo "quickstart: environment ready in $((SECONDS - start)) s" >&2
fi

# Compile the kernels into the package's cache (rbd_estimator/_jit_cache) ahead of the demo and the
# tests: about half a minute on a fresh clone, a second or two once warm (issue 14).
"$py" -m rbd_estimator.warm >/dev/null || echo "quickstart: warm-cache failed; kernels compile on first use" >&2

case "$mode" in
    demo)
        exec "$py" -m rbd_estimator.demo "$@"
        ;;
    test)
        status=0
        "$py" -m pytest -q test "$@" || status=$?
        if [[ $status -eq 5 ]]; then
            echo "quickstart: pytest collected no tests; treating that as a failure" >&2
            exit 1
        fi
        exit "$status"
        ;;
esac
