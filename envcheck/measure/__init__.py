"""Measure the user's own training run and prove changes to it.

`envcheck run --measure` runs the user's command with a start-up hook (agent/) that times
every training step from inside; `envcheck fix` runs it again with one injected change at
a time, in interleaved pairs against the unchanged command. Entry points:
`service.measure_run` (the report's `run` section) and `prove.prove_fixes` (`fix`).
"""
