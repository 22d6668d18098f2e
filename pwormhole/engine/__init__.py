"""pwormhole.engine: the event queue and its hot loop (events.py), one logical process (lp.py)."""
