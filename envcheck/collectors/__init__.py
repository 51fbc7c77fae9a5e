"""Collectors: each gathers one area of facts into the snapshot and never raises."""
