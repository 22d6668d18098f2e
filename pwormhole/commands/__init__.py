"""pwormhole.commands: the command line (cli.py) and the commands that run several simulations (compare.py,
scale.py)."""
