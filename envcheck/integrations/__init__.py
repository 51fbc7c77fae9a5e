"""Training-framework callbacks that run envcheck's preflight and watch the GPU.

Each submodule imports its framework (`keras`, `lightning`) and is imported only by
users who have it; this package itself imports nothing."""
