"""Code that runs inside the probe's child process, in the audited interpreter.

Standard library, NumPy, Pillow and the framework only: the audited environment has none
of envcheck's own dependencies. Python 3.9 syntax at most (the audited interpreter may be
older than envcheck's).
"""
