#!/usr/bin/env bash
# Run pwormhole on RANKS MPI ranks on this machine (a laptop, a workstation,
# one node of a cluster inside an allocation).
#
#   jobs/mpirun.sh RANKS [pwormhole run arguments...]
#   jobs/mpirun.sh 4 --scenario fat-tree-mix --out out/four
#
# The Python is $PWORMHOLE_PYTHON, else the active virtual environment's
# python, else the repository's .venv/bin/python, else python3 on PATH. The
# launcher is $PWORMHOLE_MPIEXEC, else the `mpiexec` next to that Python (the
# `mpich` wheel puts Hydra's mpiexec into the venv: pip install -e '.[mpi]').
# One rank runs plain Python, without mpiexec.
set -euo pipefail

usage() {
    echo "usage: $0 RANKS [pwormhole run arguments...]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
ranks=$1
shift
case "$ranks" in
    '' | *[!0-9]* | 0) echo "mpirun.sh: RANKS must be a positive integer, got '$ranks'" >&2; usage ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PWORMHOLE_PYTHON:-}"
if [ -z "$py" ]; then
    if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
        py="$VIRTUAL_ENV/bin/python"
    elif [ -x "$root/.venv/bin/python" ]; then
        py="$root/.venv/bin/python"
    else
        py="$(command -v python3 || true)"
    fi
fi
if [ -z "$py" ] || [ ! -x "$py" ]; then
    echo "mpirun.sh: no Python found; create the venv: python3 -m venv .venv && .venv/bin/pip install -e '.[all]'" >&2
    exit 2
fi

if [ "$ranks" -eq 1 ]; then
    exec "$py" -m pwormhole run "$@"
fi

mpiexec="${PWORMHOLE_MPIEXEC:-$(dirname "$py")/mpiexec}"
if [ ! -x "$mpiexec" ]; then
    echo "mpirun.sh: no mpiexec at $mpiexec (next to $py)." >&2
    echo "  Install the MPI extra into that environment: $py -m pip install -e '$root[mpi]'" >&2
    echo "  (the mpich wheel brings mpiexec), or set PWORMHOLE_MPIEXEC=/path/to/mpiexec" >&2
    echo "  of the MPI that $py's mpi4py was built against." >&2
    exit 2
fi
exec "$mpiexec" -n "$ranks" "$py" -m pwormhole run "$@"
