"""Former home of the run and its outputs; the names stay importable from here.

:mod:`pwormhole.run` (the composition root: :class:`~pwormhole.run.Run`,
:func:`~pwormhole.run.simulate`) and :mod:`pwormhole.report.writer` (the
output folder and files) hold them now.
"""

from __future__ import annotations

from .report.writer import check_outputs, output_names, prepare_out_dir
from .run import Run, simulate

PacketRun = Run  # the run of either mode

__all__ = ["PacketRun", "Run", "check_outputs", "output_names", "prepare_out_dir", "simulate"]
