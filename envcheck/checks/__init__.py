"""Python checks, grouped by area; importing this package registers them."""

from envcheck.checks import host, packages  # noqa: F401
