"""What api/ and worker/ share, below both: the service's settings and its queues.

Imports neither api/ nor worker/ (tests/test_layering.py), so db/ may use it too.
"""
