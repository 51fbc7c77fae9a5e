"""The rule engine: loading rules (TOML and Python), selecting, evaluating, ranking."""
