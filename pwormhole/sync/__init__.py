"""pwormhole.sync (see DESIGN.md layout)."""
