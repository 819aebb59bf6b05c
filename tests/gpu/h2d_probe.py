"""h2d_probe.py - is a pinned host-to-device copy slower while a kernel runs
on another stream?  (performance.md, GPU delivery: ferry's ResNet-50 copies
measured 14.6 GB/s by CUDA events under the 224 ms step, 48.7 GB/s when
streamed.)  Times a copy of BYTES (default ResNet-50's batch, 400 x 114688)
from pinned memory on its own stream, by CUDA events and by the host's
clock, with the GPU idle and with a spinning kernel (torch.cuda._sleep) on
another stream; and from pageable memory for comparison.  A report, not a
check: run by tests/gpu/device.sh's probe step."""
import statistics
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 400 * 114688
dst = torch.empty(n, dtype=torch.uint8, device="cuda")
pinned = torch.empty(n, dtype=torch.uint8).pin_memory()
pageable = torch.empty(n, dtype=torch.uint8)
side, mine = torch.cuda.Stream(), torch.cuda.Stream()


def copies(src, k=20):
    ev, wall = [], []
    for _ in range(k):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        t = time.perf_counter()
        with torch.cuda.stream(mine):
            e0.record()
            dst.copy_(src, non_blocking=True)
            e1.record()
        e1.synchronize()
        wall.append(time.perf_counter() - t)
        ev.append(e0.elapsed_time(e1) / 1e3)
    return n / statistics.median(ev) / 1e9, n / statistics.median(wall) / 1e9


def busy(seconds):
    # torch.cuda._sleep spins for a number of cycles: calibrate
    with torch.cuda.stream(side):
        torch.cuda._sleep(int(seconds * 1.5e9))


copies(pinned, 3)
print("bytes per copy: %d" % n)
print("pinned, GPU idle:       events %.2f GB/s, host clock %.2f GB/s" % copies(pinned))
busy(3.0)
print("pinned, kernel running: events %.2f GB/s, host clock %.2f GB/s" % copies(pinned))
torch.cuda.synchronize()
print("pageable, GPU idle:     events %.2f GB/s, host clock %.2f GB/s" % copies(pageable))
busy(3.0)
print("pageable, kernel running: events %.2f GB/s, host clock %.2f GB/s" % copies(pageable))
torch.cuda.synchronize()
