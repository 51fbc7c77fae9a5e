"""The start-up hook that `envcheck run --measure` and `envcheck fix` put first on the
command's PYTHONPATH: sitecustomize.py and the standard-library-only agent it loads."""
