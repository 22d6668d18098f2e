"""pwormhole.topology (see DESIGN.md layout)."""
