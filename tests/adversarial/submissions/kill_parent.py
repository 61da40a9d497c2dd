# Attack: kill or ptrace the parent (the worker), every process it can see, and the sandbox's
# init. Expected: the worker is outside the sandbox's pid namespace and untouched; the calls fail
# or hit nothing; the model is honest, so the verdict is `correct`.
import ctypes
import os
import signal

import numpy as np
import torch
import torch.nn as nn

libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH = 16
me = os.getpid()
for pid in {os.getppid(), 1, me - 1}:
    if pid > 0 and pid != me:
        for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        libc.ptrace(PTRACE_ATTACH, pid, None, None)
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != me:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.from_numpy(np.maximum(x.numpy(), 0.0))
