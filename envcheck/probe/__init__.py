"""The micro training probe: measure whether training is input-bound, and by what.

The parent side (runner, sampler, analysis) runs inside envcheck; the measuring itself
runs in `child/`, a child process of the audited interpreter, the only place a framework
is imported. Keep this module import-free: the child imports it on its way to `child`.
"""
