"""Python checks, grouped by area; importing this package registers them."""

from envcheck.checks import (  # noqa: F401
    data,
    gpu_devices,
    gpu_stack,
    host,
    keras_tf,
    packages,
    probe,
    run,
    scripts_precision,
    scripts_tf,
    scripts_torch,
    theano,
)
