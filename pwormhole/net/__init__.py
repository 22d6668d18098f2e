"""pwormhole.net (see DESIGN.md layout)."""
