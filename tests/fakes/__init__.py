"""Stand-ins for libraries that need hardware (NVML), driven by recorded data."""
