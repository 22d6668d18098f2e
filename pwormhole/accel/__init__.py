"""pwormhole.accel (see DESIGN.md layout)."""
