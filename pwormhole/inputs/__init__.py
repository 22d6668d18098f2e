"""pwormhole.inputs: reading the files users bring (format detection, HPCC config.txt, token streams)."""
