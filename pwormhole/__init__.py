"""pwormhole: packet-level RDMA datacenter network simulation for large-model training.

See docs/design.md and README.md. Time is integer picoseconds, rates integer
bits per second, sizes integer bytes throughout.
"""

__version__ = "0.1.0"

import sys as _sys

from . import compiled as _compiled

_compiled.install(_sys.meta_path)
