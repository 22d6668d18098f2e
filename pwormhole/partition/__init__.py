"""pwormhole.partition (see DESIGN.md layout)."""
