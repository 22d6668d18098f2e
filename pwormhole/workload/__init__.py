"""pwormhole.workload (see DESIGN.md layout)."""
