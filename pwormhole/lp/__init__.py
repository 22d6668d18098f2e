"""pwormhole.lp (see DESIGN.md layout)."""
