# Attack: flood stdout and stderr. Expected: killed past the output cap, verdict
# `runtime_error`; the stored logs stay small (head and tail only).
import sys

line = "A" * 4095 + "\n"
while True:
    sys.stdout.write(line)
    sys.stderr.write(line)
