"""pwormhole.report (see DESIGN.md layout)."""
