"""pwormhole.workload (see docs/design.md, "Layers and what may import what")."""
