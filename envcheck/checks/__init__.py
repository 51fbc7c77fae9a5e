"""Python checks, grouped by area; importing this package registers them."""

from envcheck.checks import host, keras_tf, packages, theano  # noqa: F401
