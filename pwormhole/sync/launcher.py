"""Whether an MPI launcher started this process (no MPI, numpy or engine imported: the command
line asks it before choosing what to load)."""

from __future__ import annotations

import os

LAUNCHER_ENV = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD")


def launched_under_mpi() -> bool:
    """True when an MPI launcher (mpiexec/mpirun/srun with PMI) started this process."""
    return any(k in os.environ for k in LAUNCHER_ENV)
