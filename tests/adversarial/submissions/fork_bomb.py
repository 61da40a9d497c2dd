# Attack: a fork bomb at import. Expected: the process limit stops it (fork fails with EAGAIN),
# the sandbox is torn down with every child, verdict `runtime_error`.
import os

while True:
    os.fork()
