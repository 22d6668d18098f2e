# lp.py is compiled with the engine's other modules; its hot loop is EventQueue.run (events.pxd beside it).
