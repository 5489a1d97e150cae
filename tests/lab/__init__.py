"""The multi-host lab (tests/lab/lab.py) and the tests that run against it."""
