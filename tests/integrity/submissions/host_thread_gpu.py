# Hack (GPU): return at once, launch the work from a host thread on another stream.
# Expected: flag side_stream_work, verdict rejected.
import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)

        def work():
            with torch.cuda.stream(torch.cuda.Stream()):
                torch.cuda._sleep(20_000_000)
                out.copy_(torch.where(x > 0, x, torch.zeros((), device=x.device)))

        threading.Thread(target=work, daemon=True).start()
        return out
