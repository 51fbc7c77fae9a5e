"""Static audit of training scripts: observations from source code, never executed."""
