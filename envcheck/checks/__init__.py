"""Python checks, one module per rule family named by its id range (ec3xx_gpu_stack holds
EC3xx rules); importing this package registers them. Helpers shared by several families
(gpu_facts, facts_helpers, cuda_tables, script_facts) carry no rules."""

from envcheck.checks import (  # noqa: F401
    ec1xx_keras_tf,
    ec1xx_packages,
    ec1xx_theano,
    ec2xx_host,
    ec3xx_gpu_devices,
    ec3xx_gpu_stack,
    ec4xx_data,
    ec5xx_precision,
    ec5xx_tf_keras,
    ec5xx_torch,
    ec6xx_probe,
    ec7xx_run,
)
